import type { EventEmitter } from 'node:events'
import { ExecgateError, describeError, type ExecutionRequest, type ExecutionResult } from '../../core'
import type { ExecuteOptions } from '../../execution/types'
import type { Workspace } from '../../workspace'
import { withDependencyInputs } from './dependency-inputs'
import { outcomeOf, type RunOutcome } from './lifecycle'
import { runInputsFor } from './run-options'
import type { TaskLiveOutput, TaskOutputChunk } from './task-live-output'
import type { TaskOutputs } from './task-outputs'
import type { TaskSchedulerOptions } from './task-scheduler-options'
import type { TaskChange } from './task-store'
import type { TaskTransitions } from './task-transitions'
import type { Task, TaskState } from './task-types'

/** The abort reason of runs stopped by the scheduler's shutdown: they go back to PENDING without spending an attempt. */
export const SHUTDOWN = new Error('the task scheduler is shutting down')
/** A claimed run's start: SPAWNING → RUNNING. */
export const STARTED: TaskChange = { to: 'RUNNING', reason: 'started' }

/** A claim by `owner` (a scheduler): PENDING → SPAWNING, counting the attempt. */
export function claimChange(task: Task, owner: string): TaskChange {
  const attempt = task.attempts + 1
  return { to: 'SPAWNING', reason: `attempt ${attempt} of ${task.retryPolicy.maxAttempts}`, patch: { attempts: attempt, owner } }
}
/** The abort reason of a run begun early whose task's start was then not stored (EarlyRun.cancel). */
const NOT_STARTED = new Error('the task was not started: its run begun early is dropped')

/** An execution under way, with what it tells as it goes and the attempt it is. */
interface Launched {
  attempt: number
  result: Promise<ExecutionResult>
  rich: ReturnType<TaskOutputs['forRun']>
}

/**
 * A run begun before its task's start is stored (TaskRunner.early): its execution under way while the store writes,
 * what it tells held back until `run` takes it on (its task's start stored and announced), or dropped by `cancel`.
 */
export interface EarlyRun extends Launched {
  confirm(): void
  cancel(): void
}

/**
 * One claimed run, from its start to its settled end: the request with its dependencies' outputs and its workspace,
 * the execution with its output told live, and the failure table's outcome written as the task's next transition.
 */
export class TaskRunner {
  constructor(
    private readonly options: Pick<TaskSchedulerOptions, 'store' | 'execute' | 'workspaceFor' | 'logger'>,
    private readonly transitions: TaskTransitions,
    private readonly live: TaskLiveOutput,
    private readonly outputs: TaskOutputs,
    /** Where each output chunk is told (`output`), for the task streams of this process. */
    private readonly emitter: EventEmitter,
  ) {}

  /**
   * Runs a claimed task; `started` when the claim already moved it to RUNNING, `dependencies` when the claim read
   * their outputs beside it.
   */
  async run(task: Task, controller: AbortController, started?: Task, dependencies?: Promise<Task[]>, early?: EarlyRun): Promise<void> {
    const move = this.transitions.move.bind(this.transitions)
    let attempt: number | undefined
    try {
      // The dependencies' outputs are read while the start is written: on a store across the network, one round trip.
      // A run started by its claim with no dependency (most) has neither to wait for.
      let inputs: Task[] = []
      let running: Task | undefined = started
      if (!started || task.dependencies.length > 0)
        [inputs, running] = await Promise.all([
          dependencies ?? this.options.store.getMany(task.dependencies),
          started ?? move(task.id, ['SPAWNING'], STARTED),
        ])
      if (!running) return
      early?.confirm()
      const launched =
        early ??
        this.launch(running, withDependencyInputs(task.request, inputs, task.dependencyPaths), controller, await this.workspaceOf(running))
      attempt = launched.attempt
      const { rich } = launched
      const result = await launched.result
      if (controller.signal.aborted) {
        // Stopped by a shutdown: queued again without spending an attempt (the run never got to finish).
        if (controller.signal.reason === SHUTDOWN)
          await move(task.id, ['RUNNING'], {
            to: 'PENDING',
            reason: 'interrupted by a shutdown; runs again',
            patch: { attempts: running.attempts - 1, owner: undefined },
            heldBy: holderOf(running),
          })
        // Cancelled or suspended meanwhile: that transition already happened.
        return
      }
      rich.rest(result)
      await this.settle(running, result, outcomeOf(running, result))
    } catch (error) {
      this.options.logger?.error({ taskId: task.id, err: describeError(error) }, 'task run failed')
      const change: TaskChange = { to: 'FAILED', reason: `internal error: ${describeError(error)}`, heldBy: holderOf(task) }
      await move(task.id, ['SPAWNING', 'RUNNING'], change).catch(() => undefined)
    } finally {
      // Only this attempt's: a resumed run of the task may have begun here meanwhile.
      if (attempt !== undefined) this.live.end(task.id, attempt)
    }
  }

  /**
   * The task's execution begun at once, before the write that starts it (TaskScheduler.insertAndStart): that write
   * and the run's way to its engine (a worker thread) then overlap. Only for a task whose run needs no preparation.
   * `running` is the task as the start will store it. Until `confirm`, what the run tells (output chunks, rich
   * outputs) is held, so nothing of it is heard before the task's start is; `cancel` (the start was not stored)
   * aborts it, drops what it tells, and leaves its record in the ledger without the task's provenance where the run
   * has not ended yet (a run that ended inside `execute`, monty's inline runs, was recorded with it).
   */
  early(running: Task, controller: AbortController): EarlyRun {
    let held: (() => void)[] | undefined = []
    let dropped = false
    const hold =
      <A extends unknown[]>(tell: (...args: A) => void) =>
      (...args: A) => {
        if (dropped) return
        if (held) held.push(() => tell(...args))
        else tell(...args)
      }
    const launched = this.launch(running, running.request, controller, undefined, hold)
    return {
      ...launched,
      confirm: () => {
        const calls = held ?? []
        held = undefined
        for (const call of calls) call()
      },
      cancel: () => {
        dropped = true
        held = undefined
        delete launched.options.provenance
        controller.abort(NOT_STARTED)
        launched.result.catch(() => undefined)
        this.live.end(running.id, launched.attempt)
      },
    }
  }

  /** The run's execution started: its request with the task's limits, its output told live, its rich outputs kept. */
  private launch(
    running: Task,
    request: ExecutionRequest,
    controller: AbortController,
    workspace: Workspace | undefined,
    hold: <A extends unknown[]>(tell: (...args: A) => void) => (...args: A) => void = (tell) => tell,
  ): Launched & { options: ExecuteOptions } {
    const attempt = running.attempts
    this.live.begin(running.id, attempt)
    const onOutput = (stream: 'stdout' | 'stderr', chunk: string) => {
      const item: TaskOutputChunk = { type: 'output', taskId: running.id, stream, chunk }
      this.live.add(item)
      this.emitter.emit('output', item)
    }
    const rich = this.outputs.forRun(running)
    const run = runInputsFor(running, request, controller.signal, hold(onOutput), hold(rich.onRichOutput), workspace)
    // An execute that throws rather than answering fails the run where `run` awaits it, as one that rejects does.
    let result: Promise<ExecutionResult>
    try {
      result = this.options.execute(run.request, run.options)
    } catch (error) {
      result = Promise.reject(error instanceof Error ? error : new Error(String(error)))
    }
    return { attempt, rich, options: run.options, result }
  }

  /** The task's own workspace outside memory, when it keeps one; a process that cannot open it fails the run saying why. */
  private async workspaceOf(task: Task): Promise<Workspace | undefined> {
    if (!task.workspace) return undefined
    if (!this.options.workspaceFor)
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
        detail:
          `task ${task.id} keeps its workspace in the bucket (${task.workspace.prefix}), and this ` +
          `process has no bucket: set fabric.s3.bucket (EXECGATE_FABRIC_S3_BUCKET)`,
      })
    return this.options.workspaceFor(task)
  }

  /** Writes a run's outcome as the task's transition (a lost run's too, with no result). */
  async settle(task: Task, result: ExecutionResult | undefined, outcome: RunOutcome): Promise<void> {
    const from: TaskState[] = ['RUNNING', 'SPAWNING']
    // The end is written only while this run still holds the task: a late result after a takeover settles nothing.
    const withResult = result ? { result, ...(result.files ? { outputFiles: result.files } : {}) } : {}
    const move = (change: TaskChange) => this.transitions.move(task.id, from, { ...change, heldBy: holderOf(task) })
    switch (outcome.kind) {
      case 'complete':
        await move({ to: 'COMPLETED', reason: 'completed', patch: { ...withResult, owner: undefined } })
        return
      case 'retry':
        await move({
          to: 'PENDING',
          reason: outcome.reason,
          patch: { ...withResult, owner: undefined, notBefore: Date.now() + outcome.delayMs },
        })
        return
      case 'suspend':
        await move({ to: 'SUSPENDED', reason: outcome.reason, patch: { ...withResult, owner: undefined } })
        return
      case 'terminate':
        await move({ to: 'TERMINATED', reason: outcome.reason, patch: { ...withResult, owner: undefined } })
        return
      case 'fail':
        await move({ to: 'FAILED', reason: outcome.reason, patch: { ...withResult, owner: undefined } })
    }
  }
}

/** The holder of a claimed run, as its claim wrote it: this scheduler and the attempt it counted. */
function holderOf(task: Task): TaskChange['heldBy'] {
  return task.owner ? { owner: task.owner, attempt: task.attempts } : undefined
}
