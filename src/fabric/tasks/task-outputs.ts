import { EventEmitter } from 'node:events'
import type { ExecutionResult, Output } from '../../core'
import type { OutputRelay, TaskOutput } from './output-relay'

export type { TaskOutput } from './output-relay'
import type { Task } from './task-types'

/**
 * The rich outputs of the tasks this process runs, as their code makes them: from adapters that stream them
 * (onRichOutput), and after the run whatever its result holds that was not sent yet (adapters that report them at
 * the end), so a reader of the task's or the plan's events sees every item once, before the task's final transition.
 * With a relay (the Redis store), each is also published to the other processes, and a reader here hears theirs.
 */
export class TaskOutputs {
  private readonly emitter = new EventEmitter().setMaxListeners(0)
  private stopRelay: (() => void) | undefined

  constructor(private readonly relay?: OutputRelay) {}

  /** The hooks of one run: `onRichOutput` for the service, `rest` once it has answered. */
  forRun(task: Pick<Task, 'id' | 'attempts' | 'provenance'>): {
    onRichOutput: (output: Output, index: number) => void
    rest: (result: ExecutionResult) => void
  } {
    let sent = 0
    const base = {
      taskId: task.id,
      attempt: task.attempts,
      ...(task.provenance?.planId ? { planId: task.provenance.planId } : {}),
      ...(task.provenance?.stepId ? { stepId: task.provenance.stepId } : {}),
    }
    const emit = (output: Output, index: number) => {
      const item: TaskOutput = { ...base, index, output }
      this.emitter.emit('output', item)
      this.relay?.publish(item)
    }
    return {
      onRichOutput: (output, index) => {
        emit(output, index)
        sent = Math.max(sent, index + 1)
      },
      rest: (result) => result.outputs?.slice(sent).forEach((output, offset) => emit(output, sent + offset)),
    }
  }

  /** Calls `listener` with every output from now on; returns the way to stop. */
  subscribe(listener: (output: TaskOutput) => void): () => void {
    // Other processes' outputs are listened for once someone here reads: a process nobody reads from never subscribes.
    this.stopRelay ??= this.relay?.subscribe((output) => this.emitter.emit('output', output))
    this.emitter.on('output', listener)
    return () => this.emitter.off('output', listener)
  }

  async close(): Promise<void> {
    this.stopRelay?.()
    this.stopRelay = undefined
    await this.relay?.close()
  }
}
