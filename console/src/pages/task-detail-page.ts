import { useEffect, useState } from 'preact/hooks'
import { ApiError } from '../api'
import type { Task, TaskEvent, TaskState } from '../api-types'
import { Badge, ErrorMessage, Loading } from '../components/feedback'
import { ResultView } from '../components/result-view'
import { formatDateTime, formatTime } from '../format'
import { html } from '../html'
import type { PageProps } from '../pages'
import { href } from '../router'
import { FactList } from '../components/fact-list'

/** After a dropped stream (not the task's end), how long before it is opened again from the last event seen. */
const RECONNECT_MS = 2000

const CAN: Record<'cancel' | 'suspend' | 'resume', readonly TaskState[]> = {
  cancel: ['PENDING', 'SPAWNING', 'RUNNING', 'SUSPENDED'],
  suspend: ['PENDING', 'RUNNING'],
  resume: ['SUSPENDED'],
}

type Chunk = { stream: 'stdout' | 'stderr'; text: string }
type StreamState = 'connecting' | 'live' | 'ended' | 'reconnecting'

/** One task: its fields, its action log and output live (GET /v1/tasks/:id/events), and cancel, suspend, resume. */
export function TaskDetailPage({ api, params }: PageProps) {
  const id = params.id!
  const path = `/v1/tasks/${encodeURIComponent(id)}`
  const [task, setTask] = useState<Task>()
  const [loadError, setLoadError] = useState<unknown>()
  const [events, setEvents] = useState<TaskEvent[]>([])
  const [output, setOutput] = useState<Chunk[]>([])
  const [stream, setStream] = useState<StreamState>('connecting')
  const [busy, setBusy] = useState<string>()
  const [actionError, setActionError] = useState<unknown>()

  const reload = () => api.get<Task>(path).then((found) => (setTask(found), setLoadError(undefined)), setLoadError)
  useEffect(() => void reload(), [path])

  useEffect(() => {
    const controller = new AbortController()
    let lastSeq = 0
    let retry: ReturnType<typeof setTimeout> | undefined
    const open = async () => {
      setStream('live')
      try {
        await api.stream(
          'GET',
          `${path}/events`,
          (event) => {
            if (event.event === 'transition') {
              const entry = JSON.parse(event.data) as TaskEvent
              lastSeq = entry.seq
              setEvents((before) => (before.some((item) => item.seq === entry.seq) ? before : [...before, entry]))
              setTask((before) => before && { ...before, state: entry.to, reason: entry.reason, attempts: entry.attempt })
              void reload() // the result and the other fields that change with a transition
            } else if (event.event === 'stdout' || event.event === 'stderr') {
              const chunk = (JSON.parse(event.data) as { chunk: string }).chunk
              setOutput((before) => [...before, { stream: event.event as Chunk['stream'], text: chunk }])
            }
          },
          { signal: controller.signal, headers: lastSeq ? { 'last-event-id': String(lastSeq) } : {} },
        )
        if (controller.signal.aborted) return
        setStream('ended')
        void reload()
      } catch (failure) {
        if (controller.signal.aborted) return
        if (failure instanceof ApiError && failure.status >= 400 && failure.status < 500) {
          setStream('ended')
          return setLoadError(failure)
        }
        setStream('reconnecting')
        retry = setTimeout(open, RECONNECT_MS)
      }
    }
    void open()
    return () => {
      controller.abort()
      clearTimeout(retry)
    }
  }, [path])

  const act = async (label: string, call: () => Promise<Task>) => {
    setBusy(label)
    setActionError(undefined)
    try {
      setTask(await call())
    } catch (failure) {
      setActionError(failure)
    } finally {
      setBusy(undefined)
    }
  }

  if (!task)
    return html`<h1 id="page-title" tabindex="-1">Task <code>${id}</code></h1><p><a href=${href('tasks')}>← All tasks</a></p>
      ${loadError ? html`<${ErrorMessage} error=${loadError} />` : html`<${Loading} what="the task" />`}`

  const facts: [string, unknown][] = [
    ['Reason', task.reason],
    ['Intent', task.intentId],
    ['Lane', `${task.lane}, priority ${task.priority}`],
    ['Attempts', task.attempts],
    ['Language', task.request.language],
    ['Adapter', task.request.adapter ?? 'automatic'],
    ['Time limit', (task.timeoutMs ?? task.request.timeoutMs) ? `${task.timeoutMs ?? task.request.timeoutMs} ms` : undefined],
    ['Deadline', task.deadline ? formatDateTime(task.deadline) : undefined],
    ['Created', formatDateTime(task.createdAt)],
    ['Updated', formatDateTime(task.updatedAt)],
  ]
  return html`
    <p><a href=${href('tasks')}>← All tasks</a></p>
    <h1 id="page-title" tabindex="-1">Task <code>${task.id}</code></h1>
    <p class="task-state">State <${Badge} value=${task.state} /> <span class="muted"
      role="status">${
        { connecting: 'connecting…', live: 'live', ended: 'stream ended', reconnecting: 'connection lost, reconnecting…' }[stream]
      }</span></p>
    <div class="actions" role="group" aria-label="Task actions">
      <button type="button" disabled=${!!busy || !CAN.cancel.includes(task.state)}
        onClick=${() => act('cancel', () => api.delete<Task>(path))}>${busy === 'cancel' ? 'Cancelling…' : 'Cancel task'}</button>
      <button type="button" disabled=${!!busy || !CAN.suspend.includes(task.state)}
        onClick=${() => act('suspend', () => api.post<Task>(`${path}/suspend`))}>${busy === 'suspend' ? 'Suspending…' : 'Suspend'}</button>
      <button type="button" disabled=${!!busy || !CAN.resume.includes(task.state)}
        onClick=${() => act('resume', () => api.post<Task>(`${path}/resume`, {}))}>${busy === 'resume' ? 'Resuming…' : 'Resume'}</button>
    </div>
    <${ErrorMessage} error=${actionError} />
    <${ErrorMessage} error=${loadError} context="Could not refresh" />
    <${FactList} facts=${facts} />
    ${
      task.dependencies.length
        ? html`<p>Depends on ${task.dependencies.map(
            (dependency, index) => html`${index ? ', ' : ''}
      <a href=${href(`tasks/${dependency}`)}><code>${dependency}</code></a>`,
          )}</p>`
        : null
    }
    <section class="panel" aria-labelledby="log-title">
      <h2 id="log-title">Action log</h2>
      <ol class="action-log" data-testid="action-log">
        ${events.map(
          (event) => html`<li data-to=${event.to}>
          <time datetime=${event.at} title=${event.at}>${formatTime(event.at)}</time>
          <span>${event.from ?? 'new'} → <${Badge} value=${event.to} /></span>
          <span class="reason">${event.reason}</span>
          <span class="muted small">attempt ${event.attempt}</span>
        </li>`,
        )}
      </ol>
    </section>
    ${
      output.length
        ? html`<section class="panel" aria-labelledby="task-output-title"><h2 id="task-output-title">Live output</h2>
      <pre class="output" role="log">${output.map((chunk) => html`<span class=${chunk.stream}>${chunk.text}</span>`)}</pre>
      </section>`
        : null
    }
    ${
      task.result
        ? html`<section class="panel" aria-labelledby="task-result-title"><h2 id="task-result-title">Result of the last run</h2>
      <${ResultView} result=${task.result} showOutput=${true} /></section>`
        : null
    }
    <section class="panel" aria-labelledby="task-code-title"><h2 id="task-code-title">Code</h2><pre class="code">
      ${task.request.code}</pre></section>
  `
}
