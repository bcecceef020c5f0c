import type { EventEmitter } from 'node:events'
import type { TaskLiveOutput } from './task-live-output'
import type { TaskStreamItem } from './task-scheduler-options'
import type { TaskOutputs } from './task-outputs'
import type { TaskStore } from './task-store'
import { isFinal, type Task, type TaskEvent } from './task-types'

/**
 * The read side of a task's life, for callers who watch it: its event stream and waiting for it to settle. Local
 * transitions and output arrive through the scheduler's emitter at once; another process's show up within a tick.
 */
export interface TaskWatchSource {
  store: TaskStore
  emitter: EventEmitter
  outputs: TaskOutputs
  /** What the runs here printed so far: a stream opened mid-run starts with it. */
  live?: TaskLiveOutput
  tickMs: number
  /**
   * The task as this process last wrote it, when a run here holds it (its end is told on `emitter`): a wait's first
   * look, instead of a read. Undefined: read it.
   */
  local?: (id: string) => Task | undefined
}

/** Every transition from the action log (from `afterSeq`), then live ones and output, until the task ends. */
export async function* taskEvents(source: TaskWatchSource, id: string, afterSeq = 0): AsyncGenerator<TaskStreamItem> {
  let last = afterSeq
  const outputs: TaskStreamItem[] = []
  let signal: () => void = () => undefined
  const onOutput = (item: TaskStreamItem) => {
    if (item.type === 'output' && item.taskId === id) (outputs.push(item), signal())
  }
  const onTransition = (event: TaskEvent) => event.taskId === id && signal()
  source.emitter.on('output', onOutput)
  source.emitter.on('transition', onTransition)
  // What the run here printed before this stream opened, taken in the same turn as the listener above began (nothing
  // missed, nothing twice). It goes out after its attempt's RUNNING, ahead of what came since; until then that waits.
  // A resumed stream (afterSeq) was sent it before.
  let replay = afterSeq > 0 ? undefined : source.live?.snapshot(id)
  // Rich outputs sent, by attempt and index: one relayed from another process is sent once, and its run's stored
  // result fills in what the relay carried after the run's end (below).
  const sent = new Set<string>()
  const stopOutputs = source.outputs.subscribe(
    (output) => output.taskId === id && (outputs.push({ type: 'rich-output', ...output }), signal()),
  )
  // Output is made while the task runs: it waits for the stream's RUNNING (another process's transitions are read a
  // tick late, its outputs come at once). A resumed stream (afterSeq) does not know: it sends them as they come.
  let lastTo: TaskEvent['to'] | undefined
  const running = () => (lastTo === undefined ? afterSeq > 0 : lastTo === 'RUNNING')
  function* drain(): Generator<TaskStreamItem> {
    if (!running() || replay) return
    while (outputs.length) {
      const item = outputs.shift()!
      if (item.type === 'rich-output') {
        const key = `${item.attempt}:${item.index}`
        if (sent.has(key)) continue
        sent.add(key)
      }
      yield item
    }
  }
  try {
    for (;;) {
      yield* drain()
      const events = await source.store.events(id, last)
      for (const event of events) {
        // A late reader was not sent the run's earlier outputs, and another process's last ones may come through Redis
        // after its end was written: the stored result has them all.
        if (isFinal(event.to) && event.from === 'RUNNING') outputs.push(...(await unsent(source.store, id, sent)))
        if (isFinal(event.to)) replay = undefined
        // Output sent before this transition was written (a run's last items, then its end) goes out first.
        yield* drain()
        last = event.seq
        lastTo = event.to
        yield { type: 'transition', event }
        if (isFinal(event.to)) return
        if (replay && event.to === 'RUNNING' && event.attempt >= replay.attempt) {
          if (event.attempt === replay.attempt) outputs.unshift(...replay.chunks)
          replay = undefined
        }
      }
      if (events.length === 0 && !(await source.store.get(id))) return
      // Local transitions wake us at once; another process's show up within a tick.
      await new Promise<void>((resolve) => {
        signal = resolve
        setTimeout(resolve, source.tickMs)
      })
    }
  } finally {
    stopOutputs()
    source.emitter.off('output', onOutput)
    source.emitter.off('transition', onTransition)
  }
}

/** The rich outputs of the task's last run that a reader was not sent live (a late reader: all), from its stored result. */
async function unsent(store: TaskStore, id: string, sent: ReadonlySet<string>): Promise<TaskStreamItem[]> {
  const task = await store.get(id)
  if (!task?.result?.outputs) return []
  const attempt = task.attempts
  const base = {
    type: 'rich-output' as const,
    taskId: id,
    attempt,
    ...(task.provenance?.planId ? { planId: task.provenance.planId } : {}),
    ...(task.provenance?.stepId ? { stepId: task.provenance.stepId } : {}),
  }
  return task.result.outputs.flatMap((output, index) => (sent.has(`${attempt}:${index}`) ? [] : [{ ...base, index, output }]))
}

/**
 * Resolves with the task once it has ended or is suspended (waiting for a person), or at `timeoutMs` as it is.
 * `check` sees the first read of the task (undefined when there is none) and may throw: the caller's ownership check,
 * made on this read instead of one of its own (a read fewer per wait).
 */
export async function waitForTask(
  source: TaskWatchSource,
  id: string,
  timeoutMs = Number.POSITIVE_INFINITY,
  check?: (task: Task | undefined) => void,
): Promise<Task | undefined> {
  const until = Date.now() + timeoutMs
  let checked = !check
  const settles = (task: Task | undefined) => !task || isFinal(task.state) || task.state === 'SUSPENDED'
  // A run here tells its end on the emitter: the first look takes its copy (no read); a later one (after a tick: the
  // end was written elsewhere, a cancel from another process) reads.
  let local = source.local?.(id)
  for (;;) {
    // Listening before reading: a transition landing between the read and the wait is not missed.
    let settled: Task | undefined
    let woken: () => void = () => undefined
    const onEvent = (event: TaskEvent, task: Task) => event.taskId === id && settles(task) && ((settled = task), woken())
    source.emitter.on('transition', onEvent)
    try {
      const task = local && !settles(local) ? local : await source.store.get(id)
      local = undefined
      if (!checked) ((checked = true), check!(task))
      if (settles(task) || Date.now() >= until) return task
      if (settled) return settled
      // Another process's transitions are not announced here: look again every tick.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(source.tickMs, Math.max(until - Date.now(), 0)))
        woken = () => (clearTimeout(timer), resolve())
      })
      // The transition that settled it carries the task as it was written: no read needed.
      if (settled) return settled
    } finally {
      source.emitter.off('transition', onEvent)
    }
  }
}
