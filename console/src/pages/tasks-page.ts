import { useState } from 'preact/hooks'
import { TASK_STATES, type Task, type TaskState } from '../api-types'
import { Badge, ErrorMessage, Loading } from '../components/feedback'
import { formatTime } from '../format'
import { usePolling } from '../hooks'
import { html } from '../html'
import type { PageProps } from '../pages'
import { href } from '../router'

const REFRESH_MS = 2000
const PAGE_SIZE = 50
/** GET /v1/tasks answers at most this many at once. */
const MOST = 500

/** The filters, kept while the user opens a task and comes back. */
const remembered: { state: TaskState | ''; intentId: string } = { state: '', intentId: '' }

/** Tasks: the caller's durable tasks, newest first, filtered by state and intent id, refreshed live. */
export function TasksPage({ api }: PageProps) {
  const [state, setState] = useState<TaskState | ''>(remembered.state)
  const [intentId, setIntentId] = useState(remembered.intentId)
  const [typedIntent, setTypedIntent] = useState(remembered.intentId)
  const [limit, setLimit] = useState(PAGE_SIZE)
  Object.assign(remembered, { state, intentId })
  const query = new URLSearchParams({
    order: 'newest',
    limit: String(limit),
    ...(state ? { state } : {}),
    ...(intentId ? { intentId } : {}),
  })
  const live = usePolling((signal) => api.get<{ tasks: Task[]; nextCursor?: string }>(`/v1/tasks?${query}`, { signal }), REFRESH_MS, [
    api,
    query.toString(),
  ])
  const page = live.data

  return html`
    <h1 id="page-title" tabindex="-1">Tasks</h1>
    <p class="lede">Your durable tasks, newest first. Submit one from the Run page (Submit as task) or with POST /v1/tasks. Updates${' '}
      every ${REFRESH_MS / 1000} s.</p>
    <form class="controls filters" role="search" aria-label="Filter tasks" onSubmit=${(event: Event) => {
      event.preventDefault()
      setIntentId(typedIntent.trim())
    }}>
      <div class="field">
        <label for="task-state">State</label>
        <select id="task-state" value=${state} onChange=${(event: Event) =>
          setState((event.currentTarget as HTMLSelectElement).value as TaskState | '')}>
          <option value="">any</option>
          ${TASK_STATES.map((item) => html`<option value=${item}>${item}</option>`)}
        </select>
      </div>
      <div class="field">
        <label for="task-intent">Intent id</label>
        <input id="task-intent" type="search" value=${typedIntent}
          onInput=${(event: Event) => setTypedIntent((event.currentTarget as HTMLInputElement).value)} />
      </div>
      <button type="submit">Filter</button>
    </form>
    <${ErrorMessage} error=${live.error} context="Could not refresh" />
    ${
      !page
        ? live.error
          ? null
          : html`<${Loading} what="tasks" />`
        : page.tasks.length === 0
          ? html`<p data-testid="no-tasks">No task${state || intentId ? ' matches these filters' : ' yet'}.</p>`
          : html`
            <div class="table-scroll">
              <table class="data" data-testid="task-table">
                <caption class="visually-hidden">Tasks${state ? ` in state ${state}` : ''}
                  ${intentId ? ` of intent ${intentId}` : ''}</caption>
                <thead><tr><th scope="col">Task</th><th scope="col">State</th><th scope="col">Intent</th><th scope="col">Language</th>
                  <th scope="col">Lane</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col">Updated</th>
                  <th scope="col">Reason</th></tr></thead>
                <tbody>
                  ${page.tasks.map(
                    (task) => html`<tr data-task=${task.id} data-state=${task.state}>
                    <th scope="row"><a href=${href(`tasks/${task.id}`)} title=${task.id}
                      aria-label=${`Task ${task.id}`}><code>${task.id.length > 13 ? `${task.id.slice(0, 8)}…` : task.id}</code></a></th>
                    <td><${Badge} value=${task.state} /></td>
                    <td>${task.intentId ?? html`<span class="muted">—</span>`}</td>
                    <td>${task.request.language}${
                      task.request.adapter ? html` <span class="muted">on ${task.request.adapter}</span>` : null
                    }</td>
                    <td>${task.lane}${task.priority ? ` (${task.priority})` : ''}</td>
                    <td>${task.attempts}</td>
                    <td><time datetime=${task.createdAt}>${formatTime(task.createdAt)}</time></td>
                    <td><time datetime=${task.updatedAt}>${formatTime(task.updatedAt)}</time></td>
                    <td class="reason">${task.reason}</td>
                  </tr>`,
                  )}
                </tbody>
              </table>
            </div>
            ${
              page.nextCursor && limit < MOST
                ? html`<button type="button"
              onClick=${() => setLimit(Math.min(MOST, limit + PAGE_SIZE))}>Show ${PAGE_SIZE} more</button>`
                : null
            }
          `
    }
  `
}
