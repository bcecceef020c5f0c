import type { ComponentType } from 'preact'
import type { ApiClient } from './api'
import { ActivityPage } from './pages/activity-page'
import { AdaptersPage } from './pages/adapters-page'
import { ArtifactPage } from './pages/artifact-page'
import { ArtifactsPage } from './pages/artifacts-page'
import { PlanDetailPage } from './pages/plan-detail-page'
import { PlanSubmitPage } from './pages/plan-submit-page'
import { PlansPage } from './pages/plans-page'
import { RunPage } from './pages/run-page'
import { RunRecordPage } from './pages/run-record-page'
import { SandboxPage } from './pages/sandbox-page'
import { SandboxesPage } from './pages/sandboxes-page'
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
 * the page titles come from this list. The first pattern that matches a path wins (`plans/new` before `plans/:id`).
 */
export const PAGES: readonly PageDefinition[] = [
  { path: 'run', title: 'Run', component: RunPage },
  { path: 'adapters', title: 'Adapters', component: AdaptersPage },
  { path: 'activity', title: 'Activity', component: ActivityPage },
  { path: 'tasks', title: 'Tasks', component: TasksPage },
  { path: 'tasks/:id', title: 'Task', component: TaskDetailPage, parent: 'tasks' },
  { path: 'plans', title: 'Plans', component: PlansPage },
  { path: 'plans/new', title: 'Submit a plan', component: PlanSubmitPage, parent: 'plans' },
  { path: 'plans/:id', title: 'Plan', component: PlanDetailPage, parent: 'plans' },
  { path: 'artifacts', title: 'Artifacts', component: ArtifactsPage },
  { path: 'artifacts/:sha256', title: 'Artifact', component: ArtifactPage, parent: 'artifacts' },
  { path: 'runs/:id', title: 'Run provenance', component: RunRecordPage, parent: 'artifacts' },
  { path: 'sandboxes', title: 'Sandboxes', component: SandboxesPage },
  { path: 'sandboxes/:id', title: 'Sandbox', component: SandboxPage, parent: 'sandboxes' },
]
