import { EventEmitter } from 'node:events'
import { randomUUID } from 'node:crypto'
import { ExecgateError, describeError } from '../../core'
import { requestRefusal, type Task, type TaskState } from '../tasks'
import { findPlanProblem } from './plan-schema'
import { ENGINE_REASON_PREFIX, failureOf, recordsFor, requestFor, stepWorkspacePrefix, taskSpecFor } from './plan-steps'
import { currentVersion, decideRevision, revisionContext, stepCheckProblem } from './plan-revision'
import {
  decidesPlan,
  isPlanFinal,
  type NewPlanEvent,
  type NewStepEvent,
  type Plan,
  type PlanEvent,
  type PlanSpec,
  type PlanState,
  type PlanVersion,
} from './plan-types'
import { StepLogMirror, type ReadAhead } from './step-log-mirror'
import type { PlanCaller, PlanEngineOptions } from './plan-engine-options'
import { planVersionRecord } from './plan-versions'
import { alignSteps } from './plan-suspension'
import { EngineLease } from './engine-lease'
import { nextOwnerId } from '../owner-id'

export type { PlanCaller, PlanEngineOptions, PlanSettings } from './plan-engine-options'

/** How many plans' step task ids the engine keeps from its last look (plans not ended; a few ids each). */
const LOOKS_KEPT = 4096

/** The step task ids of the plan's current and previous version, once each. */
function stepTaskIds(plan: Plan): string[] {
  return [...new Set(plan.versions.slice(-2).flatMap((version) => version.steps.map((step) => step.taskId)))]
}

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
  /** Each plan not ended's step task ids as its last look here found them: the next look reads them beside the plan. */
  private readonly lookedAt = new Map<string, string[]>()
  private readonly revising = new Map<string, AbortController>()
  /** Plans being cancelled here: no reflector is asked for them from now on. */
  private readonly cancelling = new Set<string>()
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
    this.steps = new StepLogMirror(options.store, options.taskStore, (events) => this.announce(events))
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
      // Not the driver: the transition is announced to it (src/app/fabric-wiring.ts), which advances the plan.
      if (decidesPlan(task.state) && this.driving) this.kick(planId)
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
    for (const controller of this.revising.values()) controller.abort(new Error('the plan engine is stopping'))
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

  /** Copies the plan's steps' transitions into its log now (for a reader following it live). */
  async catchUp(id: string): Promise<void> {
    const plan = await this.options.store.get(id)
    if (plan && !isPlanFinal(plan.state)) await this.mirror(plan, await this.tasksOf(plan))
  }

  async submit(spec: PlanSpec, caller: PlanCaller): Promise<Plan> {
    const { settings } = this.options
    const invalid = (detail: string) => new ExecgateError('EXECGATE_REQUEST_INVALID', { detail })
    const problem = findPlanProblem(spec, settings)
    if (problem) throw invalid(problem)
    const workspace = spec.workspace ?? settings.workspaces ?? 'memory'
    const at = new Date().toISOString()
    const draft = { id: randomUUID(), versions: [] as PlanVersion[] }
    const version: PlanVersion = { version: 1, createdAt: at, reason: 'submitted', steps: recordsFor(draft, spec.steps, 1, new Map()) }
    const plan: Plan = {
      id: draft.id,
      tenant: caller.tenant,
      ...(caller.profile ? { profile: caller.profile } : {}),
      ...(spec.goal ? { goal: spec.goal } : {}),
      state: 'RUNNING',
      reason: 'submitted',
      version: 1,
      maxRevisions: spec.maxRevisions ?? settings.maxRevisions,
      priority: spec.priority ?? 0,
      lane: spec.lane ?? 'batch',
      ...(workspace === 's3' ? { workspace } : {}),
      versions: [version],
      revisions: [],
      rev: 1,
      createdAt: at,
      updatedAt: at,
    }
    // A step whose limits loosen the caller's profile is refused as a task's would be (EXECGATE_SUBMIT_REFUSED, naming
    // the step and the limit); the code's static checks (a forbidden import) refuse the plan as invalid.
    const rules = this.rules()
    const checked = {
      tenant: plan.tenant,
      ...(plan.profile ? { profile: plan.profile } : {}),
      ...(rules.workspaceAccess ? { workspaceAccess: rules.workspaceAccess } : {}),
    }
    for (const step of version.steps) {
      const loosened = requestRefusal(rules.check, requestFor(step), checked)
      if (loosened) throw new ExecgateError('EXECGATE_SUBMIT_REFUSED', { subject: 'the plan', reason: `step "${step.id}": ${loosened}` })
    }
    for (const step of version.steps) {
      const refused = stepCheckProblem(rules, plan, step)
      if (refused) throw invalid(refused)
    }
    this.announce(await this.options.store.insert(plan, [{ type: 'plan', at, version: 1, from: null, to: 'RUNNING', reason: 'submitted' }]))
    // Its first look (at its first step's end) reads its tasks and their logs beside it.
    if (this.driving) {
      this.rememberLook(plan.id, stepTaskIds(plan))
      this.steps.started(plan.id)
    }
    await this.submitTasks(plan, true)
    return plan
  }

  /** Terminates a plan and its steps (a running one is stopped). Undefined when it had already ended. */
  async cancel(id: string, reason = 'cancelled by the caller'): Promise<Plan | undefined> {
    this.cancelling.add(id)
    this.revising.get(id)?.abort(new Error(reason))
    let ended: Plan | undefined
    await this.serial(id, async () => {
      const plan = await this.options.store.get(id)
      if (!plan || isPlanFinal(plan.state)) return
      for (const task of (await this.tasksOf(plan)).values()) {
        if (task.state !== 'COMPLETED' && task.state !== 'FAILED' && task.state !== 'TERMINATED')
          await this.options.tasks.scheduler.cancel(task.id, `${ENGINE_REASON_PREFIX}${id} ${reason}`)
      }
      ended = await this.finish(plan, 'TERMINATED', reason)
    }).finally(() => this.cancelling.delete(id))
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
        !(turned = await this.write(plan, { state: to, reason }, [{ type: 'plan', at: '', version: plan.version, from, to, reason }]))
      )
        plan = await this.options.store.get(id)
      if (turned) await this.align(turned, await this.tasksOf(turned))
    })
    if (turned) this.kick(id)
    return turned
  }

  /** Holds or lets go of the plan's steps as its state says, and copies what moved into its log. */
  private async align(plan: Plan, tasks: Map<string, Task>): Promise<boolean> {
    const moved = await alignSteps(this.options.tasks.scheduler, plan, tasks, () => this.tasksOf(plan))
    if (moved) await this.mirror(plan, await this.tasksOf(plan))
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

  private rules() {
    const { check, settings } = this.options
    return { check, maxSteps: settings.maxSteps, ...(settings.workspaceAccess ? { workspaceAccess: settings.workspaceAccess } : {}) }
  }

  /** The tasks of the current and the previous version (what may still change or still need mirroring). */
  private tasksOf(plan: Plan): Promise<Map<string, Task>> {
    return this.readTasks(stepTaskIds(plan))
  }

  private async readTasks(ids: readonly string[]): Promise<Map<string, Task>> {
    return new Map((await this.options.taskStore.getMany(ids)).map((task) => [task.id, task]))
  }

  /**
   * The plan and its tasks (tasksOf), the tasks read beside the plan when their ids are the ones its last look found
   * (on a store across the network, one round trip for both); after it when a version came or went meanwhile.
   */
  private async look(id: string): Promise<{ plan: Plan; tasks: Map<string, Task>; logs?: ReadAhead | undefined } | undefined> {
    const guessed = this.lookedAt.get(id)
    // The steps' logs asked for after their tasks (StepLogMirror.readAhead): one round trip on Redis for all three.
    const [plan, tasks, logs] = await Promise.all([
      this.options.store.get(id),
      guessed && this.readTasks(guessed),
      guessed && this.steps.readAhead(id, guessed),
    ])
    const ids = plan && stepTaskIds(plan)
    this.lookedAt.delete(id)
    if (!plan || !ids) return undefined
    if (!isPlanFinal(plan.state)) this.rememberLook(id, ids)
    const same = guessed !== undefined && guessed.length === ids.length && ids.every((taskId, index) => guessed[index] === taskId)
    return tasks && same ? { plan, tasks, logs } : { plan, tasks: await this.readTasks(ids) }
  }

  private rememberLook(id: string, ids: string[]): void {
    this.lookedAt.set(id, ids)
    // Plans ended elsewhere are never looked at here again: the oldest go first (a Map iterates in insertion order).
    if (this.lookedAt.size > LOOKS_KEPT) this.lookedAt.delete(this.lookedAt.keys().next().value!)
  }

  /** One look at a plan: mirror its steps' transitions, then complete it, pause it on a failure, or revise it. */
  private async advance(id: string): Promise<void> {
    const looked = await this.look(id)
    if (!looked || this.stopped) return
    let { plan, tasks } = looked
    const version = currentVersion(plan)
    // Every step completed (nothing held, missing or failed: the checks below would find nothing): the steps' last
    // transitions are copied with the plan's end, in one write where the store can (one script on Redis).
    if (plan.state === 'RUNNING' && version.steps.every((step) => tasks.get(step.taskId)?.state === 'COMPLETED'))
      return void (await this.finish(plan, 'COMPLETED', `every step completed (version ${plan.version})`, tasks, looked.logs))
    await this.steps.mirror(plan.id, tasks.values(), looked.logs)
    if (isPlanFinal(plan.state)) return void this.steps.forget(id)
    if (plan.state === 'SUSPENDED') return void (await this.align(plan, tasks))
    if (plan.state === 'RUNNING') {
      if (await this.align(plan, tasks)) return this.kick(id) // steps it held while suspended, if a resume was cut short
      if (version.steps.some((step) => !tasks.has(step.taskId))) return this.submitTasks(plan) // a crash between the version and its tasks
      const failed = version.steps
        .filter((step) => failureOf(tasks.get(step.taskId)!) !== undefined)
        .sort((a, b) => tasks.get(a.taskId)!.updatedAt.localeCompare(tasks.get(b.taskId)!.updatedAt))[0]
      // None failed, and not every one completed (finished above): the plan waits for its steps.
      if (!failed) return
      const reason = `step ${failed.id} failed: ${failureOf(tasks.get(failed.taskId)!)}`
      const paused = await this.write(plan, { state: 'REVISING', reason, failedStep: failed.id, owner: this.owner }, [
        { type: 'plan', at: '', version: plan.version, from: 'RUNNING', to: 'REVISING', reason },
      ])
      if (!paused) return this.kick(id)
      plan = paused
    }
    if (plan.owner !== this.owner) {
      if (plan.owner && (await this.lease.alive(plan.owner))) return
      const taken = await this.write(plan, { owner: this.owner }, [])
      if (!taken) return this.kick(id)
      plan = taken
    }
    // Paused: steps not started are not started; started ones (running, or between retries) may finish.
    for (const step of version.steps) {
      const task = tasks.get(step.taskId)!
      if (task.state === 'PENDING' && task.attempts === 0)
        await this.options.tasks.scheduler.cancel(task.id, `${ENGINE_REASON_PREFIX}${id} paused: ${plan.reason}`)
    }
    tasks = await this.tasksOf(plan)
    await this.mirror(plan, tasks)
    if ([...tasks.values()].some((task) => IN_FLIGHT.includes(task.state) || task.state === 'PENDING')) return
    await this.revise(plan, tasks)
  }

  /** The fix-plan loop for one failure: ask, decide, record; until a revision is accepted or none is left. */
  private async revise(plan: Plan, tasks: Map<string, Task>): Promise<void> {
    const failedTask = tasks.get(currentVersion(plan).steps.find((step) => step.id === plan.failedStep)!.taskId)!
    const error = `step ${plan.failedStep} failed: ${failureOf(failedTask)}`
    const { reflector } = this.options
    if (!reflector)
      return void (await this.finish(
        plan,
        'FAILED',
        `${error}; no reflector is configured (fabric.plans.reflector.modelId), so the plan was not revised`,
      ))
    while (plan.revisions.length < plan.maxRevisions && !this.cancelling.has(plan.id)) {
      const controller = new AbortController()
      this.revising.set(plan.id, controller)
      const reply = await reflector
        .revise(revisionContext(plan, tasks, this.options.settings.allowedImports), controller.signal)
        .finally(() => this.revising.delete(plan.id))
      // Cancelled, or this process is stopping: a restart asks again (an unanswered question is not counted).
      if (controller.signal.aborted || this.stopped || this.cancelling.has(plan.id)) return
      const completed = await this.completedTasks(plan)
      const decision = reply.problem !== undefined ? { problem: reply.problem } : decideRevision(this.rules(), plan, reply.steps, completed)
      const attempt = plan.revisions.length + 1
      const at = new Date().toISOString()
      if (decision.problem !== undefined) {
        const refused = { attempt, at, stepId: plan.failedStep!, accepted: false, reason: decision.problem }
        const next = await this.write(plan, { revisions: [...plan.revisions, refused] }, [
          { type: 'revision', at, version: plan.version, attempt, accepted: false, stepId: refused.stepId, reason: refused.reason },
        ])
        if (!next) return this.kick(plan.id)
        plan = next
        continue
      }
      // What stays of the old version ends here (a suspended step is revised, not resumed).
      for (const task of tasks.values())
        if (task.state === 'SUSPENDED')
          await this.options.tasks.scheduler.cancel(task.id, `${ENGINE_REASON_PREFIX}${plan.id} revised to version ${plan.version + 1}`)
      await this.mirror(plan, await this.tasksOf(plan))
      const note = (reply.problem === undefined ? reply.note : undefined) ?? 'revised by the reflector'
      const version: PlanVersion = {
        version: plan.version + 1,
        createdAt: at,
        reason: `revision ${attempt}: ${error}`,
        note,
        steps: decision.records,
        changes: decision.changes,
      }
      const reason = `revised to version ${version.version} after ${error}`
      const next = await this.write(
        plan,
        {
          state: 'RUNNING',
          reason,
          version: version.version,
          versions: [...plan.versions, version],
          revisions: [...plan.revisions, { attempt, at, stepId: plan.failedStep!, accepted: true, version: version.version, reason: note }],
          failedStep: undefined,
          owner: undefined,
        },
        [
          {
            type: 'revision',
            at,
            version: version.version,
            attempt,
            accepted: true,
            stepId: plan.failedStep!,
            reason: note,
            changes: decision.changes,
          },
          { type: 'plan', at, version: version.version, from: 'REVISING', to: 'RUNNING', reason },
        ],
      )
      if (!next) return this.kick(plan.id)
      await this.submitTasks(next)
      return this.kick(plan.id)
    }
    if (this.cancelling.has(plan.id)) return
    const last = plan.revisions.at(-1)
    const refusedLast = last && !last.accepted ? `; the last reply was refused: ${last.reason}` : ''
    await this.finish(plan, 'FAILED', `${error}; no revision left (${plan.revisions.length} of ${plan.maxRevisions} used${refusedLast})`)
  }

  /** Every completed task of the plan's versions: runs a revision may keep. */
  private async completedTasks(plan: Plan): Promise<Map<string, Task>> {
    const ids = [...new Set(plan.versions.flatMap((version) => version.steps.map((step) => step.taskId)))]
    return new Map((await this.options.taskStore.getMany(ids)).filter((task) => task.state === 'COMPLETED').map((task) => [task.id, task]))
  }

  /**
   * Records the current version, then submits its tasks not in the store yet (kept runs are already there; none for
   * a new plan). Every path to a version's first run comes through here (a submission, an accepted revision, a restart
   * that finds a version without its tasks), so no version runs unrecorded, and recording again answers the first.
   */
  private async submitTasks(plan: Plan, fresh = false): Promise<void> {
    const version = currentVersion(plan)
    await this.recordVersion(plan, version)
    const existing = new Set(
      fresh ? [] : (await this.options.taskStore.getMany(version.steps.map((step) => step.taskId))).map((task) => task.id),
    )
    const steps = version.steps.filter((step) => !existing.has(step.taskId))
    if (steps.length === 0) return
    const { workspaceAccess } = this.options.settings
    // A step's bucket prefix is its own in this version: a retry empties it, a revision's rerun gets another.
    const prefixes = new Map(steps.map((step) => [step.taskId, stepWorkspacePrefix(plan.id, step.id, version.version)]))
    const workspaceOf =
      plan.workspace === 's3' ? (taskId: string) => ({ kind: 'bucket' as const, prefix: prefixes.get(taskId)! }) : undefined
    // Their first log entries reach the plan's log with the next copy, in the task log's order like every other.
    await this.options.tasks.scheduler.submit(
      steps.map((step) => taskSpecFor(plan, version, step)),
      {
        tenant: plan.tenant,
        ...(plan.profile ? { profile: plan.profile } : {}),
        ...(workspaceAccess ? { workspaceAccess } : {}),
        ...(workspaceOf ? { workspaceOf } : {}),
        // A new plan's step task ids are made of its id, made just now: no task can hold one yet (none is looked up).
        ...(fresh ? { ownIds: true } : {}),
      },
    )
  }

  /**
   * The ledger's record of a version, queued before its steps run so their runs' records name it (`prov:plan`). A
   * ledger that cannot write now keeps the record queued ahead of the runs and writes it when it can: the plan goes on.
   */
  private async recordVersion(plan: Plan, version: PlanVersion): Promise<void> {
    try {
      await this.options.recordVersion?.(planVersionRecord(plan, version))
    } catch (error) {
      this.options.logger?.warn(
        { planId: plan.id, version: version.version, err: describeError(error) },
        'the plan version was not recorded in the ledger yet',
      )
    }
  }

  /**
   * Ends a plan, with its steps' last transitions copied into its log first (so the log's last event is the plan's end).
   * `tasks`, when given, were just read and all ended (nothing of them can be missing from the log once copied), with
   * `logs` read ahead of them (StepLogMirror.readAhead).
   */
  private async finish(
    plan: Plan,
    state: PlanState,
    reason: string,
    tasks?: ReadonlyMap<string, Task>,
    logs?: ReadAhead,
  ): Promise<Plan | undefined> {
    for (;;) {
      const seen = tasks ?? (await this.tasksOf(plan))
      const steps = await this.steps.fresh(plan.id, seen.values(), logs)
      tasks = logs = undefined
      const ended = await this.write(
        plan,
        { state, reason, owner: undefined, ...(state === 'COMPLETED' ? { failedStep: undefined } : {}) },
        [{ type: 'plan', at: '', version: plan.version, from: plan.state, to: state, reason }],
        seen,
        steps,
      )
      if (ended) {
        // Ended here: nothing of it is looked at again (a late look finds it ended and copies what is left).
        this.steps.forget(plan.id)
        this.lookedAt.delete(plan.id)
        return ended
      }
      const again = await this.options.store.get(plan.id)
      if (!again || isPlanFinal(again.state)) return undefined
      plan = again
    }
  }

  /**
   * One compare-and-set write of the plan with its events; undefined when another write got there first. `tasks`: its
   * steps' tasks as the write's caller just read them (told to `onWritten` listeners). `steps`: step events to copy
   * into its log first (StepLogMirror.fresh), copied whether the write lands or not; with the write in one where the
   * store can (PlanStore.mirrorAndUpdate).
   */
  private async write(
    plan: Plan,
    patch: Partial<Plan>,
    events: NewPlanEvent[],
    tasks?: ReadonlyMap<string, Task>,
    steps: readonly NewStepEvent[] = [],
  ): Promise<Plan | undefined> {
    const at = new Date().toISOString()
    const next: Plan = { ...plan, ...patch, rev: plan.rev + 1, updatedAt: at }
    for (const key of Object.keys(patch) as (keyof Plan)[]) if (patch[key] === undefined) delete next[key]
    const stamped = events.map((event) => ({ ...event, at: event.at || at }))
    const { store } = this.options
    let written: PlanEvent[] | undefined
    if (steps.length > 0 && store.mirrorAndUpdate) {
      const both = await store.mirrorAndUpdate(next, steps, stamped)
      this.announce(both.mirrored)
      written = both.written
    } else {
      if (steps.length > 0) this.announce(await store.mirror(plan.id, steps))
      written = await store.update(next, stamped)
    }
    if (!written) return undefined
    // Before the events: a waiter they wake finds the plan as written here.
    this.emitter.emit('written', next, tasks)
    this.announce(written)
    return next
  }

  /** Copies the steps' task transitions into the plan's log. */
  private mirror(plan: Plan, tasks: ReadonlyMap<string, Task>): Promise<void> {
    return this.steps.mirror(plan.id, tasks.values())
  }

  private announce(events: readonly PlanEvent[]): void {
    for (const event of events) this.emitter.emit('event', event)
  }
}
