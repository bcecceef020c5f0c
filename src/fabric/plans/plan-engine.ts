import { EventEmitter } from 'node:events'
import { describeError } from '../../core'
import type { Task, TaskState } from '../tasks'
import { ENGINE_REASON_PREFIX, failureOf } from './plan-steps'
import { currentVersion } from './plan-revision'
import { decidesPlan, isPlanFinal, type Plan, type PlanEvent, type PlanSpec, type PlanState } from './plan-types'
import { StepLogMirror } from './step-log-mirror'
import type { PlanCaller, PlanEngineOptions } from './plan-engine-options'
import { alignSteps } from './plan-suspension'
import { EngineLease } from './engine-lease'
import { PlanLooks } from './plan-looks'
import { PlanWriter } from './plan-writer'
import { newPlan, planRules } from './new-plan'
import { PlanReviser } from './plan-reviser'
import { submitVersionTasks } from './version-tasks'
import { nextOwnerId } from '../owner-id'

export type { PlanCaller, PlanEngineOptions, PlanSettings } from './plan-engine-options'

const IN_FLIGHT: readonly TaskState[] = ['SPAWNING', 'RUNNING']

/**
 * The plan engine: submits each version's steps as tasks (dependencies by task, inputs under `steps/<id>/`), follows
 * their transitions, and on a step's failure pauses the plan, asks the reflector, records the revision as a new
 * version and resumes. Each plan is advanced by one call at a time in a process, and every plan write is a
 * compare-and-set, so processes sharing the store never both revise a plan.
 */
export class PlanEngine {
  private readonly emitter = new EventEmitter()
  private readonly owner: string
  private readonly chains = new Map<string, { running: Promise<void>; again: boolean }>()
  /** The plan's reads (with its steps' tasks) and its writes (compare-and-set, told to the listeners). */
  private readonly looks: PlanLooks
  private readonly writer: PlanWriter
  private readonly reviser: PlanReviser
  private readonly steps: StepLogMirror
  private stopTransitions: () => void = () => undefined
  private timer: NodeJS.Timeout | undefined
  private readonly lease: EngineLease
  private stopped = true
  /**
   * This engine drives plans: advances them on the steps it hears of and sweeps the active ones each tick. Always on a
   * store without a driver lease; on Redis only the lease's holder, so one node drives each plan (docs/plans.md).
   */
  private driving = true
  private stopWatch: () => void = () => undefined

  constructor(private readonly options: PlanEngineOptions) {
    this.owner = options.owner ?? nextOwnerId()
    this.emitter.setMaxListeners(0)
    // The revision lease expires with the driver lease: a node killed while asking the reflector is replaced as soon.
    this.lease = new EngineLease(options.store, this.owner, {
      ttlMs: this.driverLeaseMs(),
      renewMs: options.tickMs ?? 1000,
      ...(options.ownerAlive ? { ownerAlive: options.ownerAlive } : {}),
      ...(options.logger ? { logger: options.logger } : {}),
    })
    this.steps = new StepLogMirror(options.store, options.taskStore, (events) => this.writer.announce(events))
    this.looks = new PlanLooks(options.store, options.taskStore, this.steps)
    this.writer = new PlanWriter(options.store, this.emitter, this.steps, this.looks)
    this.reviser = new PlanReviser(options, this.writer, this.looks, {
      stopped: () => this.stopped,
      kick: (id) => this.kick(id),
    })
  }

  /** Follows the plans' tasks, and picks up every plan not yet ended (a restart continues them). */
  async start(): Promise<void> {
    this.stopped = false
    await this.drives()
    // Only a step's end (or suspension) can change what its plan does next, so only those advance it; the advance
    // copies the steps' transitions into the plan's log in one write. A live reader of the log is told of the others
    // (`onStepMoved`) and asks for them (`catchUp`). Other processes' transitions are found by the tick.
    this.stopTransitions = this.options.tasks.scheduler.onTransition((_event, task) => {
      const planId = task.provenance?.planId
      if (!planId) return
      // Not the driver: the transition is announced to it (src/app/fabric-wiring.ts), which advances the plan. A step
      // completed that a later step waits on decides nothing: no look, its log is copied with the plan's next decision
      // (or by a live reader's catchUp), and its dependents are made ready by the scheduler without the engine.
      if (decidesPlan(task.state) && this.driving && !this.looks.waitedOn(planId, task)) this.kick(planId)
      else this.emitter.emit('step', planId)
    })
    // Steps that moved in other processes (workers) are pushed: the driver advances their plans at once.
    this.stopWatch =
      this.options.store.watch?.((planId, kind) => {
        if (kind === 'step' && this.driving && !this.stopped) this.kick(planId)
      }) ?? (() => undefined)
    await this.lease.start()
    this.timer = setInterval(() => void this.tick(), this.options.tickMs ?? 1000)
    this.timer.unref()
    await this.tick()
  }

  /** Whether this engine drives plans now: takes or renews the driver lease where the store has one. */
  private async drives(): Promise<boolean> {
    const { store } = this.options
    if (!store.drive) return true
    try {
      const driving = await store.drive(this.owner, this.driverLeaseMs())
      if (driving !== this.driving)
        this.options.logger?.info({ owner: this.owner, driving }, driving ? 'driving plans' : 'another engine drives plans')
      this.driving = driving
    } catch (error) {
      this.options.logger?.warn({ err: describeError(error) }, 'the plan engine could not renew its driver lease')
    }
    return this.driving
  }

  /**
   * Short, and renewed every tick: the deployment's plans wait for a dead driver's lease (or a dead reviser's) to run
   * out (docs/plans.md).
   */
  private driverLeaseMs(): number {
    const { driverLeaseMs, leaseMs = 30_000, tickMs = 1000 } = this.options
    return driverLeaseMs ?? Math.min(leaseMs, Math.max(2000, 5 * tickMs))
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    this.stopTransitions()
    this.stopWatch()
    this.reviser.abortAll(new Error('the plan engine is stopping'))
    while (this.chains.size > 0) await Promise.all([...this.chains.values()].map((chain) => chain.running))
    await this.lease.stop()
  }

  onEvent(listener: (event: PlanEvent) => void): () => void {
    this.emitter.on('event', listener)
    return () => this.emitter.off('event', listener)
  }

  /**
   * A write of a plan here, with the plan as written (before its events are announced), and its steps' tasks when the
   * write was made on a fresh look at them: a waiter woken by the events needs no read of what it just heard.
   */
  onWritten(listener: (plan: Plan, tasks?: ReadonlyMap<string, Task>) => void): () => void {
    this.emitter.on('written', listener)
    return () => this.emitter.off('written', listener)
  }

  /** A step of the plan moved here without anything for the plan to decide: its log has it once `catchUp` ran. */
  onStepMoved(listener: (planId: string) => void): () => void {
    this.emitter.on('step', listener)
    return () => this.emitter.off('step', listener)
  }

  /**
   * The plan as this engine (driving) last submitted, looked at or wrote it, while not ended (PlanLooks.seen): a
   * write here updates it before its listeners hear of it. Undefined when not known here.
   */
  seen(id: string): Plan | undefined {
    return this.looks.seen(id)
  }

  /** Copies the plan's steps' transitions into its log now (for a reader following it live). */
  async catchUp(id: string): Promise<void> {
    const plan = await this.options.store.get(id)
    if (plan && !isPlanFinal(plan.state)) await this.writer.mirror(plan, await this.looks.tasksOf(plan))
  }

  /** Stores a new plan and submits its first version's steps; answers the plan and the steps' tasks as submitted. */
  async submit(spec: PlanSpec, caller: PlanCaller): Promise<{ plan: Plan; tasks: Task[] }> {
    const plan = newPlan(spec, caller, this.options.settings, planRules(this.options))
    const { store } = this.options
    const inserting = store.insert(plan, [{ type: 'plan', at: plan.createdAt, version: 1, from: null, to: 'RUNNING', reason: 'submitted' }])
    // Where the insert lands before a task written after it (PlanStore.insertLandsBeforeTasks), the steps are sent
    // behind it, not after its answer: on Redis one round trip for both inserts and the first step's announcement.
    if (!store.insertLandsBeforeTasks) this.writer.announce(await inserting)
    else inserting.catch(() => undefined)
    // Its first look (at its first step's end) reads its tasks and their logs beside it.
    if (this.driving) {
      this.looks.remember(plan)
      this.steps.started(plan.id)
    }
    const submitting = submitVersionTasks(this.options, plan, true)
    if (store.insertLandsBeforeTasks) {
      submitting.catch(() => undefined)
      try {
        this.writer.announce(await inserting)
      } catch (error) {
        // The plan is not stored: steps that landed anyway are ended, none runs for a plan that does not exist.
        this.looks.forget(plan.id)
        const tasks = await submitting.catch(() => [])
        for (const task of tasks) await this.options.tasks.scheduler.cancel(task.id, 'its plan was not stored').catch(() => undefined)
        throw error
      }
    }
    return { plan, tasks: await submitting }
  }

  /** Terminates a plan and its steps (a running one is stopped). Undefined when it had already ended. */
  async cancel(id: string, reason = 'cancelled by the caller'): Promise<Plan | undefined> {
    this.reviser.cancelling(id, new Error(reason))
    let ended: Plan | undefined
    await this.serial(id, async () => {
      const plan = await this.options.store.get(id)
      if (!plan || isPlanFinal(plan.state)) return
      for (const task of (await this.looks.tasksOf(plan)).values()) {
        if (task.state !== 'COMPLETED' && task.state !== 'FAILED' && task.state !== 'TERMINATED')
          await this.options.tasks.scheduler.cancel(task.id, `${ENGINE_REASON_PREFIX}${id} ${reason}`)
      }
      ended = await this.writer.finish(plan, 'TERMINATED', reason)
    }).finally(() => this.reviser.cancelled(id))
    return ended
  }

  /** Suspends a RUNNING plan: no step starts, running ones are suspended (not failed). Undefined unless it was RUNNING. */
  suspend = (id: string, reason = 'suspended by the caller') => this.turn(id, 'RUNNING', 'SUSPENDED', reason)
  /** Resumes a SUSPENDED plan: the steps it held run again, completed ones are kept. Undefined unless it was SUSPENDED. */
  resume = (id: string, reason = 'resumed by the caller') => this.turn(id, 'SUSPENDED', 'RUNNING', reason)

  /** Moves the plan between RUNNING and SUSPENDED, then its steps after it (plan-suspension.ts). */
  private async turn(id: string, from: PlanState, to: PlanState, reason: string): Promise<Plan | undefined> {
    let turned: Plan | undefined
    await this.serial(id, async () => {
      let plan = await this.options.store.get(id)
      // A write another process got to first (a compare-and-set lost) reads the plan again.
      while (
        plan?.state === from &&
        !(turned = await this.writer.write(plan, { state: to, reason }, [
          { type: 'plan', at: '', version: plan.version, from, to, reason },
        ]))
      )
        plan = await this.options.store.get(id)
      if (turned) await this.align(turned, await this.looks.tasksOf(turned))
    })
    if (turned) this.kick(id)
    return turned
  }

  /** Holds or lets go of the plan's steps as its state says, and copies what moved into its log. */
  private async align(plan: Plan, tasks: Map<string, Task>): Promise<boolean> {
    const moved = await alignSteps(this.options.tasks.scheduler, plan, tasks, () => this.looks.tasksOf(plan))
    if (moved) await this.writer.mirror(plan, await this.looks.tasksOf(plan))
    return moved
  }

  /** Advances a plan soon: once now, and once more after that if kicked meanwhile; the driver's to do when it is another. */
  kick(id: string): void {
    if (!this.driving) {
      this.options.store
        .announceStep?.(id, 'step')
        .catch((error: unknown) => this.options.logger?.warn({ planId: id, err: describeError(error) }, 'could not tell the plan driver'))
      return
    }
    const chain = this.chains.get(id)
    if (chain) {
      chain.again = true
      return
    }
    void this.serial(id, () => this.advance(id))
  }

  private async tick(): Promise<void> {
    try {
      // Only the driver sweeps: what it hears is pushed; the sweep finds what no message carried (a restart, a loss).
      if (!(await this.drives()) || this.stopped) return
      for (const plan of await this.options.store.active()) this.kick(plan.id)
    } catch (error) {
      this.options.logger?.error({ err: describeError(error) }, 'plan engine tick failed')
    }
  }

  /** Runs `work` after whatever this process is doing with the plan; a kick meanwhile advances it once more after. */
  private serial(id: string, work: () => Promise<void>): Promise<void> {
    const previous = this.chains.get(id)
    // A kick that landed on the entry this one replaces is carried over, not lost.
    const entry = { running: Promise.resolve(), again: previous?.again ?? false }
    if (previous) previous.again = false
    entry.running = (previous?.running ?? Promise.resolve())
      .then(work)
      .catch((error) => this.options.logger?.error({ planId: id, err: describeError(error) }, 'advancing a plan failed'))
      .finally(() => {
        if (this.chains.get(id) !== entry) return
        this.chains.delete(id)
        if (entry.again && !this.stopped) this.kick(id)
      })
    this.chains.set(id, entry)
    return entry.running
  }

  /** One look at a plan: mirror its steps' transitions, then complete it, pause it on a failure, or revise it. */
  private async advance(id: string): Promise<void> {
    const looked = await this.looks.look(id)
    if (!looked || this.stopped) return
    let { plan, tasks } = looked
    const version = currentVersion(plan)
    // Every step completed (nothing held, missing or failed: the checks below would find nothing): the steps' last
    // transitions are copied with the plan's end, in one write where the store can (one script on Redis).
    if (plan.state === 'RUNNING' && version.steps.every((step) => tasks.get(step.taskId)?.state === 'COMPLETED'))
      return void (await this.writer.finish(plan, 'COMPLETED', `every step completed (version ${plan.version})`, tasks, looked.logs))
    await this.steps.mirror(plan.id, tasks.values(), looked.logs)
    if (isPlanFinal(plan.state)) return void this.steps.forget(id)
    if (plan.state === 'SUSPENDED') return void (await this.align(plan, tasks))
    if (plan.state === 'RUNNING') {
      if (await this.align(plan, tasks)) return this.kick(id) // steps it held while suspended, if a resume was cut short
      // A crash between the version and its tasks: they are submitted now.
      if (version.steps.some((step) => !tasks.has(step.taskId))) return void (await submitVersionTasks(this.options, plan))
      const failed = version.steps
        .filter((step) => failureOf(tasks.get(step.taskId)!) !== undefined)
        .sort((a, b) => tasks.get(a.taskId)!.updatedAt.localeCompare(tasks.get(b.taskId)!.updatedAt))[0]
      // None failed, and not every one completed (finished above): the plan waits for its steps.
      if (!failed) return
      const reason = `step ${failed.id} failed: ${failureOf(tasks.get(failed.taskId)!)}`
      const paused = await this.writer.write(plan, { state: 'REVISING', reason, failedStep: failed.id, owner: this.owner }, [
        { type: 'plan', at: '', version: plan.version, from: 'RUNNING', to: 'REVISING', reason },
      ])
      if (!paused) return this.kick(id)
      plan = paused
    }
    if (plan.owner !== this.owner) {
      if (plan.owner && (await this.lease.alive(plan.owner))) return
      const taken = await this.writer.write(plan, { owner: this.owner }, [])
      if (!taken) return this.kick(id)
      plan = taken
    }
    // Paused: steps not started are not started; started ones (running, or between retries) may finish.
    for (const step of version.steps) {
      const task = tasks.get(step.taskId)!
      if (task.state === 'PENDING' && task.attempts === 0)
        await this.options.tasks.scheduler.cancel(task.id, `${ENGINE_REASON_PREFIX}${id} paused: ${plan.reason}`)
    }
    tasks = await this.looks.tasksOf(plan)
    await this.writer.mirror(plan, tasks)
    if ([...tasks.values()].some((task) => IN_FLIGHT.includes(task.state) || task.state === 'PENDING')) return
    await this.reviser.revise(plan, tasks)
  }
}
