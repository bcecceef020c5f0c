import type { TaskStreamItem } from './task-scheduler-options'

/** One stdout or stderr chunk of a task's run, as its event stream sends it. */
export type TaskOutputChunk = Extract<TaskStreamItem, { type: 'output' }>

/** What a run here has written so far, for a reader that opens the task's stream after the run began. */
export interface LiveRunOutput {
  attempt: number
  chunks: TaskOutputChunk[]
}

/** Bytes of one run's output kept for late readers: the newest are kept (the stored result has it all at the end). */
const DEFAULT_KEPT_BYTES = 256 * 1024

/**
 * The stdout and stderr of the runs this process is making, kept until each ends, so that a reader who opens a task's
 * event stream mid-run (a console page opened after the submit) sees what the run already printed and not only what
 * comes after. Bounded per run; the oldest chunks go first.
 */
export class TaskLiveOutput {
  private readonly runs = new Map<string, LiveRunOutput & { bytes: number }>()

  constructor(private readonly keptBytes = DEFAULT_KEPT_BYTES) {}

  begin(taskId: string, attempt: number): void {
    this.runs.set(taskId, { attempt, chunks: [], bytes: 0 })
  }

  add(item: TaskOutputChunk): void {
    const run = this.runs.get(item.taskId)
    if (!run) return
    run.chunks.push(item)
    run.bytes += item.chunk.length
    while (run.bytes > this.keptBytes && run.chunks.length > 1) run.bytes -= run.chunks.shift()!.chunk.length
  }

  end(taskId: string, attempt: number): void {
    if (this.runs.get(taskId)?.attempt === attempt) this.runs.delete(taskId)
  }

  /** A copy of what the task's run here has printed so far; undefined when it is not running here. */
  snapshot(taskId: string): LiveRunOutput | undefined {
    const run = this.runs.get(taskId)
    return run && { attempt: run.attempt, chunks: [...run.chunks] }
  }
}
