import type { ComponentType } from 'preact'
import type { ApiClient } from './api'
import { ActivityPage } from './pages/activity-page'
import { AdaptersPage } from './pages/adapters-page'
import { RunPage } from './pages/run-page'
import { TaskDetailPage } from './pages/task-detail-page'
import { TasksPage } from './pages/tasks-page'

export interface PageProps {
  api: ApiClient
  /** The route's `:name` parts, e.g. `{ id }` for `tasks/:id`. */
  params: Record<string, string>
}

export interface PageDefinition {
  /** The hash route: `tasks` is `#/tasks`; `:id` parts become params. */
  path: string
  title: string
  component: ComponentType<PageProps>
  /** The navigation entry it belongs under; absent for a top-level entry. */
  parent?: string
}

/**
 * Every page of the console. A page is one file under pages/ and one entry here: the navigation, the routing and
 * the page titles come from this list (the Plans, Artifacts and Sandboxes pages join it as their APIs land).
 */
export const PAGES: readonly PageDefinition[] = [
  { path: 'run', title: 'Run', component: RunPage },
  { path: 'adapters', title: 'Adapters', component: AdaptersPage },
  { path: 'activity', title: 'Activity', component: ActivityPage },
  { path: 'tasks', title: 'Tasks', component: TasksPage },
  { path: 'tasks/:id', title: 'Task', component: TaskDetailPage, parent: 'tasks' },
]
