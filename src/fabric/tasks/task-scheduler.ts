import { EventEmitter } from 'node:events'
import { describeError } from '../../core'
import { nextOwnerId } from '../owner-id'
import { DueTaskPump } from './due-task-pump'
import { EndStarts } from './end-starts'
import { RunSlots } from './run-slots'
import { outcomeOfLostRun } from './lifecycle'
import { TaskLiveOutput } from './task-live-output'
import { TaskOutputs } from './task-outputs'
import { SHUTDOWN, STARTED, TaskRunner, claimChange, type EarlyRun } from './task-runner'
import { afterChange, type InsertedTasks, type TaskChange, type TaskStore, type TransitionSteps } from './task-store'
import { firstDue, needsNoPreparation, prepareTasks, type Submitter } from './task-submission'
import { defaultOwnerAlive, type ResumeChanges, type TaskSchedulerOptions, type TaskStreamItem } from './task-scheduler-options'
import { TaskTransitions } from './task-transitions'
import { isFinal, type Task, type TaskEvent, type TaskSpec } from './task-types'
import { taskEvents, waitForTask, type TaskWatchSource } from './task-watch'

export {
  RESUME_FIELDS,
  defaultOwnerAlive,
  type ExecuteFunction,
  type ResumeChanges,
  type TaskSchedulerOptions,
  type TaskStreamItem,
} from './task-scheduler-options'

/**
 * The scheduler: every rule of the task lifecycle, above the store. It starts ready tasks by priority, applies the
 * failure table to each result (TaskRunner), retries with backoff, ends tasks whose start-by deadline passed,
 * cascades failed dependencies (TaskTransitions), and on start recovers the runs a dead process left behind.
 */
export class TaskScheduler {
  readonly store: TaskStore
  /** Rich outputs of the runs here, as their code makes them (task and plan event streams). */
  readonly outputs: TaskOutputs
  private readonly emitter = new EventEmitter()
  /** Stdout and stderr of the runs here so far, for a stream opened mid-run. */
  private readonly live = new TaskLiveOutput()
  private readonly slots: RunSlots
  private readonly running: Map<string, AbortController>
  private readonly transitions: TaskTransitions
  private readonly runner: TaskRunner
  private readonly concurrency: number
  private readonly owner: string
  private timer: NodeJS.Timeout | undefined
  private readonly pump: DueTaskPump
  // Nothing starts before start(): a process that only submits (the CLI without --wait) never runs a task.
  private stopped = true

  constructor(private readonly options: TaskSchedulerOptions) {
    this.store = options.store
    this.outputs = new TaskOutputs(options.outputRelay)
    this.concurrency = options.concurrency ?? 4
    this.slots = new RunSlots(this.concurrency)
    this.running = this.slots.running
    this.owner = options.owner ?? nextOwnerId()
    this.emitter.setMaxListeners(0)
    this.transitions = new TaskTransitions(this.store, this.emitter, (task) => this.announce(task), options.dispatcher)
    this.runner = new TaskRunner(options, this.transitions, this.live, this.outputs, this.emitter)
    this.pump = new DueTaskPump({
      store: this.store,
      logger: options.logger,
      looks: () => !this.stopped && !options.dispatcher,
      freeSlots: () => this.concurrency - this.running.size,
      claim: (task) => this.claim(task),
    })
    const ends = new EndStarts({
      store: this.store,
      slots: this.slots,
      owner: this.owner,
      stopped: () => this.stopped,
      begin: (task, steps, controller, inputs) => void this.begin(task, steps, controller, true, inputs),
    })
    // A dependent made ready by an end written here may start here, claimed behind that end (no dispatcher's round
    // trips): only where a dispatcher hands out every other run, and the store can hold the run's lease itself.
    if (options.dispatcher && this.store.startBehind) this.store.startHere = (...args) => ends.startHere(...args)
    // Without a dispatcher, a store that can (SQLite) starts such a dependent inside the end's own write: made ready,
    // claimed and started in its commit, no readiness write, pump look or claim commit of its own.
    else if (!options.dispatcher) this.store.startInside = (...args) => ends.startInside(...args)
  }

  /** Recovers what a crashed process left, then starts running tasks. */
  async start(): Promise<void> {
    this.stopped = false
    await this.recover()
    this.timer = setInterval(() => void this.tick(), this.options.tickMs ?? 200)
    this.timer.unref()
    if (this.options.dispatcher)
      await this.options.dispatcher.consume((id, announced, handedBack) => this.runDispatched(id, announced, handedBack), this.concurrency)
    this.pump.wake()
  }

  /** Stops starting tasks and waits for the runs in flight (`abort` cancels them: a restart runs them again). */
  async stop({ abort = false } = {}): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    // No new runs from here on: what is announced meanwhile (a run stopped below goes back to PENDING) is left for others.
    await this.options.dispatcher?.pause()
    if (abort) for (const controller of this.running.values()) controller.abort(SHUTDOWN)
    this.slots.wakeAll()
    while (this.running.size > 0 || this.pump.busy) await new Promise((resolve) => setTimeout(resolve, 10))
    await this.options.dispatcher?.close()
    await this.outputs.close()
  }

  /** `schemaChecked`: the caller found every spec valid against the task schema already (the task service's submit). */
  async submit(specs: readonly TaskSpec[], submitter: Submitter, schemaChecked = false): Promise<Task[]> {
    const prepared = await prepareTasks(this.store, specs, submitter, Date.now(), schemaChecked)
    const first = firstDue(prepared)
    const starting = first && this.startsAtSubmit(first) ? first : undefined
    if (prepared.length === 1 && starting) return [await this.submitAndStart(starting)]
    // Its batch's first due task started in the insert's own commit, when it may be (not announced: not due then).
    let started: string | undefined
    const due = (task: Task) => task.ready && task.state === 'PENDING' && task.id !== started
    const inserting = starting
      ? this.insertAndStart(prepared, starting).then(({ tasks, started: moved }) => ((started = moved?.task.id), tasks))
      : this.store.insert(prepared, 'submitted')
    // Where an announcement made now lands after the insert just sent (the store's connection runs both in order),
    // the new tasks are announced with the insert, not after its answer: a round trip sooner to their start. A task
    // the insert answers with one stored before (its idempotency key or id found it) leaves an announcement of an id
    // not stored, or of the task stored: harmless, as any extra one (a claim reads the task as stored). Should that
    // connection give up on one, they are announced again the usual way once the insert has answered.
    const behind = this.options.dispatcher?.dispatchBehindStoreWrites
    const early = behind ? prepared.filter(due) : []
    // One after another: tasks of equal priority are announced in submission order.
    const announceAll = async (tasks: readonly Task[], announce = (task: Task) => this.announce(task)) => {
      for (const task of tasks) await announce(task)
    }
    const announcedEarly = announceAll(early, (task) => behind!(task)).then(
      () => true,
      () => false,
    )
    const [tasks, landed] = await Promise.all([inserting, announcedEarly])
    if (!landed) await announceAll(early)
    // A dependency may have finished between the readiness check and the insert: look again for the fresh ones
    // (each look on its own, beside the announcements: on a store across the network, one round trip for all). Not
    // for a task whose dependencies are all tasks of this batch not ended: their ends, after this insert, find it.
    const batch = new Map(tasks.map((task) => [task.id, task]))
    const mayBeReady = (task: Task) =>
      task.dependencies.length === 0 || task.dependencies.some((id) => !batch.has(id) || isFinal(batch.get(id)!.state))
    await Promise.all([
      announceAll(tasks.filter((task) => due(task) && !early.includes(task))),
      ...tasks
        .filter((task) => !task.ready && task.state === 'PENDING' && mayBeReady(task))
        .map((task) => this.transitions.refreshReadiness(task)),
    ])
    return tasks
  }

  /**
   * Whether a new task may be stored and started in one write: this process finds its own due tasks (no dispatcher),
   * runs, has a free slot, and the run needs no preparation. The store starts it only if no due task is ahead of it.
   */
  private startsAtSubmit(task: Task): boolean {
    return (
      this.store.insertAndStart !== undefined &&
      !this.options.dispatcher &&
      !this.stopped &&
      this.running.size < this.concurrency &&
      task.ready &&
      needsNoPreparation(task) &&
      !(task.deadline && Date.parse(task.deadline) < Date.now())
    )
  }

  /**
   * Stores the tasks and, when `first` (one of them) is the first due, starts it in the same commit; answers the tasks
   * as submitted, with the start if it started.
   */
  private async insertAndStart(tasks: readonly Task[], first: Task): Promise<InsertedTasks> {
    const controller = this.slots.reserve(first.id)
    const changes = [claimChange(first, this.owner), STARTED]
    // Its run begins before the write that starts it (TaskRunner.early), so that the write and the run's way to its
    // engine overlap: ~0.1 ms of a trivial task's. Not with an idempotency key (a retried submission answered with the
    // task stored before would run its code for nothing), nor for a run that changes more than its answer (a session).
    const running = changes.reduce((task, change) => afterChange(task, change, first.updatedAt), first)
    const early = first.idempotencyKey || !this.options.repeatable?.(first) ? undefined : this.runner.early(running, controller)
    let inserted: InsertedTasks | undefined
    try {
      inserted = await this.store.insertAndStart!(tasks, 'submitted', Date.now(), { id: first.id, changes })
    } finally {
      if (!inserted?.started) (early?.cancel(), this.slots.release(first.id, controller))
    }
    if (inserted.started) this.begin(inserted.started.task, inserted.started.steps, controller, true, undefined, early)
    return inserted
  }

  /** Stores the task and, when it is the first due, starts it in the same commit; answers the task as submitted. */
  private async submitAndStart(task: Task): Promise<Task> {
    const inserted = await this.insertAndStart([task], task)
    const stored = inserted.tasks[0]!
    if (inserted.started) return stored
    // Not started (another task was due first, or the key found an earlier task): left to the pump as usual.
    if (stored.ready && stored.state === 'PENDING') await this.announce(stored)
    else if (stored.state === 'PENDING') await this.transitions.refreshReadiness(stored)
    return stored
  }

  /** Terminates a task (DELETE /v1/tasks/:id); a run in flight here is cancelled. Undefined when it had already ended. */
  async cancel(id: string, reason = 'cancelled by the caller'): Promise<Task | undefined> {
    const changed = await this.transitions.move(id, ['PENDING', 'SPAWNING', 'RUNNING', 'SUSPENDED'], { to: 'TERMINATED', reason })
    this.running.get(id)?.abort(new Error(reason))
    return changed
  }

  /** Suspends a pending or running task (a running one is stopped; resume runs it again). */
  async suspend(id: string, reason = 'suspended by the caller'): Promise<Task | undefined> {
    const changed = await this.transitions.move(id, ['PENDING', 'RUNNING'], { to: 'SUSPENDED', reason })
    this.running.get(id)?.abort(new Error(reason))
    return changed
  }

  async resume(id: string, changes: ResumeChanges = {}): Promise<Task | undefined> {
    const task = await this.store.get(id)
    if (!task) return undefined
    const request = { ...task.request, ...changes }
    const changed = Object.keys(changes).length ? ` with ${Object.keys(changes).join(', ')} changed` : ''
    return this.transitions.move(id, ['SUSPENDED'], {
      to: 'PENDING',
      reason: `resumed by the caller${changed}`,
      patch: { request, notBefore: 0 },
    })
  }

  /** Every transition from the action log (from `afterSeq`), then live ones and output, until the task ends. */
  events(id: string, afterSeq = 0): AsyncGenerator<TaskStreamItem> {
    return taskEvents(this.watchSource(), id, afterSeq)
  }

  /**
   * Resolves with the task once it has ended or is suspended (waiting for a person), or at `timeoutMs` as it is;
   * `check` sees the first read of it (waitForTask).
   */
  wait(id: string, timeoutMs = Number.POSITIVE_INFINITY, check?: (task: Task | undefined) => void): Promise<Task | undefined> {
    const local = (task: string) => (this.running.has(task) ? this.store.cached?.(task) : undefined)
    return waitForTask({ ...this.watchSource(), local }, id, timeoutMs, check)
  }

  private watchSource(): TaskWatchSource {
    return { store: this.store, emitter: this.emitter, outputs: this.outputs, live: this.live, tickMs: this.options.tickMs ?? 200 }
  }

  onTransition(listener: (event: TaskEvent, task: Task) => void): () => void {
    this.emitter.on('transition', listener)
    return () => this.emitter.off('transition', listener)
  }

  /** A task is due (now or at its notBefore): the dispatcher hands it to a free process, or this one looks. */
  private async announce(task: Task): Promise<void> {
    if (this.options.dispatcher) await this.options.dispatcher.dispatch(task)
    else this.pump.wake()
  }

  /**
   * Runs a task the dispatcher handed this process, until it settles. A run still marked as another process's was
   * lost (the dispatcher only hands it back when that process stopped renewing its lease): the retry policy decides.
   * An announcement made for an earlier attempt is stale and does nothing: a process killed mid-run leaves its
   * announcement held until its lease lapses, and by then a restart's recovery may have retried the task under a new
   * announcement; the old one, handed back, must not take the new run for the lost one (or claim the retry early).
   * Nor is a run taken for lost by an announcement never handed back (`handedBack` false): a second announcement of
   * the same attempt (a resume while the first still queued, two readiness writes) finds the run the first one started.
   */
  private async runDispatched(id: string, announced?: number, handedBack?: boolean): Promise<void> {
    // A run started here behind an end (startHere) takes a slot no dispatcher counts: a job taken meanwhile waits for
    // one, so this process never runs more than `concurrency` at once.
    await this.slots.free(() => this.stopped)
    // Claimed on the copy the announcing write left here, when it says the claim is due: no read first. The claim
    // lands only on the task as counted (claimOf, checked in the store's write); anything else is read as stored.
    const copy = announced === undefined ? undefined : this.store.cached?.(id)
    if (copy && this.claimableCopy(copy, announced!)) {
      const begun = await this.claim(copy)
      if (begun) return begun.settled
    }
    let task = await this.store.get(id)
    if (task && (task.state === 'SPAWNING' || task.state === 'RUNNING') && task.owner !== this.owner && !this.running.has(id)) {
      // The run this announcement started is attempt announced + 1; any later one was started by a later announcement.
      if (announced !== undefined && (task.attempts !== announced + 1 || handedBack === false)) return
      await this.runner.settle(task, undefined, outcomeOfLostRun(task, 'lease lapsed'))
      task = await this.store.get(id)
      if (announced !== undefined) return
    }
    if (!task || task.state !== 'PENDING') return
    if (announced !== undefined && task.attempts !== announced) return
    // Announced beside its readiness write (refreshReadiness), and taken before that write landed (or its announcer
    // died between the two): ready by its dependencies, as the write would have made it.
    if (!task.ready) {
      task = await this.transitions.readyByDependencies(task)
      if (!task) return
    }
    // Handed over while this process stops, or early: announced again so another process (or a later time) runs it.
    if (this.stopped || task.notBefore > Date.now()) return this.options.dispatcher?.dispatch(task)
    await (
      await this.claim(task)
    )?.settled
  }

  /**
   * Whether a copy of an announced task (maybe stale) says its announcement is due to be claimed now: pending, ready,
   * at the announced attempt, its backoff and start-by deadline not in the way, and no run of it here. Any other case
   * (a lost run to settle, an announcement to hand back) is decided on the task as stored.
   */
  private claimableCopy(task: Task, announced: number): boolean {
    const now = Date.now()
    return (
      !this.stopped &&
      !this.running.has(task.id) &&
      task.state === 'PENDING' &&
      task.ready &&
      task.attempts === announced &&
      task.notBefore <= now &&
      !(task.deadline && Date.parse(task.deadline) < now)
    )
  }

  private async tick(): Promise<void> {
    try {
      const now = Date.now()
      for (const task of await this.store.expired(now)) {
        await this.transitions.move(task.id, ['PENDING'], { to: 'TERMINATED', reason: `deadline: not started by ${task.deadline}` })
      }
      // Runs started behind an end whose holder stopped renewing their lease: lost, as a job BullMQ hands back.
      for (const task of (await this.store.lapsedRuns?.(now)) ?? [])
        await this.runner.settle(task, undefined, outcomeOfLostRun(task, 'lease lapsed'))
      this.pump.wake()
    } catch (error) {
      this.options.logger?.error({ err: describeError(error) }, 'task scheduler tick failed')
    }
  }

  /**
   * Claims a due task (PENDING → SPAWNING) and starts its run; `settled` resolves when the run has settled.
   * Undefined when another process or call claimed it first.
   */
  private async claim(task: Task): Promise<{ settled: Promise<void> } | undefined> {
    if (task.deadline && Date.parse(task.deadline) < Date.now() && task.attempts === 0) {
      await this.transitions.move(task.id, ['PENDING'], { to: 'TERMINATED', reason: `deadline: not started by ${task.deadline}` })
      return undefined
    }
    // Counted from this copy of the task: the claim lands only while the stored task is still at that attempt.
    const claim: TaskChange = { ...claimChange(task, this.owner), claimOf: { attempts: task.attempts, now: Date.now() } }
    const controller = this.slots.reserve(task.id)
    let begun: { settled: Promise<void> } | undefined
    try {
      if (this.store.transitions && !task.workspace) {
        // No workspace to open: claimed and started in one write, one commit instead of two (the log still shows
        // both), its dependencies' outputs read meanwhile (on a store across the network, beside the write). A
        // failed read fails the run (awaited in run()); one made for a claim lost is dropped.
        const dependencies = task.dependencies.length > 0 ? this.store.getMany(task.dependencies) : undefined
        dependencies?.catch(() => undefined)
        const moved = await this.store.transitions(task.id, ['PENDING'], [claim, STARTED])
        if (moved) begun = this.begin(moved.task, moved.steps, controller, true, dependencies)
      } else {
        const claimed = await this.transitions.move(task.id, ['PENDING'], claim)
        if (claimed) begun = this.begin(claimed, [], controller, false)
      }
    } finally {
      if (!begun) this.slots.release(task.id, controller)
    }
    return begun
  }

  /**
   * Starts a claimed run in its reserved slot. `steps` are the claim's transitions still to announce: after the
   * reservation, so a listener's cancel reaches the run. `started` when the claim already moved it to RUNNING.
   */
  private begin(
    task: Task,
    steps: TransitionSteps['steps'],
    controller: AbortController,
    started: boolean,
    dependencies?: Promise<Task[]>,
    early?: EarlyRun,
  ): { settled: Promise<void> } {
    for (const step of steps) this.emitter.emit('transition', step.event, step.task)
    // In an object: an async function returning the promise itself would wait for the whole run.
    const settled = this.runner.run(task, controller, started ? task : undefined, dependencies, early).finally(() => {
      this.slots.release(task.id, controller)
      this.pump.slotFreed()
    })
    return { settled }
  }

  /**
   * After a crash: runs left SPAWNING or RUNNING by a process that is gone are treated as a backend crash, so the
   * retry policy decides (at least once); tasks still waiting on dependencies are checked again.
   */
  private async recover(): Promise<void> {
    const alive = this.options.ownerAlive ?? defaultOwnerAlive
    for (const task of await this.store.inStates(['SPAWNING', 'RUNNING'])) {
      if (task.owner && task.owner !== this.owner && alive(task.owner)) continue
      await this.runner.settle(task, undefined, outcomeOfLostRun(task))
    }
    for (const task of await this.store.inStates(['PENDING', 'SUSPENDED'])) if (!task.ready) await this.transitions.refreshReadiness(task)
  }
}
