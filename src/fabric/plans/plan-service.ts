import { ExecgateError } from '../../core'
import type { Logger } from '../../observability/logger'
import {
  assertResumeChanges,
  isFinal,
  type ResumeChanges,
  type TaskCaller,
  type TaskReader,
  type TaskService,
  type Task,
  type TaskState,
  type TaskStore,
} from '../tasks'
import { PlanEngine, type PlanSettings } from './plan-engine'
import { currentVersion, type StepCheck } from './plan-revision'
import { applyResumeChanges, resumeReason } from './plan-resume'
import { stepViews } from './plan-steps'
import type { PlanStore } from './plan-store'
import {
  isPlanFinal,
  type Plan,
  type PlanEvent,
  type PlanOutputEvent,
  type PlanSpec,
  type PlanState,
  type PlanStreamItem,
  type PlanView,
} from './plan-types'
import type { Reflector } from './reflector'
import type { PlanVersionRecorder } from './plan-versions'

/** A plan in a listing: its state and counts, without its versions. */
export interface PlanSummary {
  id: string
  goal?: string
  state: PlanState
  reason: string
  version: number
  steps: number
  revisions: number
  maxRevisions: number
  failedStep?: string
  createdAt: string
  updatedAt: string
}

/** Plans, as the library offers them (`execgate.plans`); HTTP, MCP and the CLI call the same. Every call is a tenant's. */
export interface PlanService {
  /** Validates the plan, stores it and submits its first steps; resolves with the plan RUNNING. */
  run(spec: PlanSpec, caller?: TaskCaller): Promise<PlanView>
  get(id: string, caller?: TaskCaller): Promise<PlanView | undefined>
  /** Until the plan ends or is suspended; at `timeoutMs` it returns the plan as it is. */
  wait(id: string, options?: TaskCaller & { timeoutMs?: number }): Promise<PlanView>
  /** Terminates the plan and its running steps. */
  cancel(id: string, caller?: TaskCaller): Promise<PlanView>
  /** RUNNING → SUSPENDED: no step starts, running steps' tasks are suspended; EXECGATE_PLAN_CONFLICT from another state. */
  suspend(id: string, caller?: TaskCaller): Promise<PlanView>
  /**
   * SUSPENDED → RUNNING: the steps it suspended run again, completed ones are kept; EXECGATE_PLAN_CONFLICT from another
   * state. `changes` go to the steps it held, each within the plan's profile or EXECGATE_RESUME_REFUSED (plan-resume.ts).
   */
  resume(id: string, changes?: ResumeChanges, caller?: TaskCaller): Promise<PlanView>
  list(
    filter?: { state?: PlanState; limit?: number; cursor?: string; order?: 'oldest' | 'newest' },
    caller?: TaskCaller,
  ): Promise<{ plans: PlanSummary[]; nextCursor?: string }>
  /**
   * The plan's log (plan and step transitions, revisions) from `afterSeq`, then live, until the plan ends; with its
   * steps' rich outputs as they are made (`type: 'output'`, no `seq`): the steps this process runs, and on the Redis
   * store those of any process (src/fabric/tasks/redis-output-relay.ts); those not heard live (a late reader) come
   * from the step's stored result just before its end in the log.
   */
  events(id: string, options?: TaskCaller & { afterSeq?: number }): AsyncGenerator<PlanStreamItem>
  /** Starts driving plans now (continuing those a stopped process left) instead of at the first call. */
  start(): Promise<void>
  /** Stops driving plans; the task service is the caller's to close. */
  close(): Promise<void>
}

export interface PlanServiceOptions {
  tasks: TaskService
  check: StepCheck
  settings: PlanSettings
  reflector?: Reflector
  /** Records each plan version where its steps' runs point at it (the artifact ledger's `recordPlanVersion`). */
  recordVersion?: PlanVersionRecorder
  /** Where plans live: the plan store of the driver `fabric.store` names (src/fabric/drivers), beside the tasks. */
  store: PlanStore
  /** The tasks' store, through its interface (the one `tasks` runs on): read, and a SUSPENDED step's request updated on resume. */
  taskStore: TaskReader & Pick<TaskStore, 'update'>
  /** `fabric.leaseMs`: the bound of the plan driver and revision leases (each 5 s by default, docs/plans.md). */
  leaseMs?: number
  /** This engine's name in plans it revises and in its leases (one per execgate: src/fabric/owner-id.ts). */
  owner?: string
  /** Drive plans in this process (false: only submit and read, e.g. the CLI without --wait). @default true */
  run?: boolean
  tickMs?: number
  logger?: Logger
}

const DEFAULT_TENANT = 'local'

/** A plan this process's engine ended, as it wrote it, with its steps' tasks when it had just read them. */
interface Ended {
  plan: Plan
  tasks?: ReadonlyMap<string, Task> | undefined
}

export function createPlanService(options: PlanServiceOptions): PlanService {
  const store = options.store
  const engine = new PlanEngine({
    store,
    tasks: options.tasks,
    taskStore: options.taskStore,
    check: options.check,
    settings: options.settings,
    reflector: options.reflector,
    recordVersion: options.recordVersion,
    logger: options.logger,
    tickMs: options.tickMs,
    leaseMs: options.leaseMs,
    ...(options.owner ? { owner: options.owner } : {}),
  })
  const tickMs = options.tickMs ?? 1000
  const tenantOf = (caller: TaskCaller = {}) => caller.tenant ?? DEFAULT_TENANT
  // Another tenant's plan answers exactly like a missing one, so ids never leak across tenants.
  const owned = async (id: string, caller?: TaskCaller): Promise<Plan> => {
    const plan = await store.get(id)
    if (!plan || plan.tenant !== tenantOf(caller))
      throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no plan "${id}" for tenant ${tenantOf(caller)}` })
    return plan
  }
  /**
   * `known`: the steps' tasks as just read; used only when every step of the version is there and ended (none can
   * move), or, `submitted`, when they are the tasks the plan's submission just stored (the plan as it was then).
   */
  const view = async (plan: Plan, known?: ReadonlyMap<string, Task>, submitted = false): Promise<PlanView> => {
    const version = currentVersion(plan)
    const ended =
      known &&
      version.steps.every((step) => {
        const task = known.get(step.taskId)
        return task !== undefined && (submitted || isFinal(task.state))
      })
    const tasks = ended
      ? known
      : new Map((await options.taskStore.getMany(version.steps.map((step) => step.taskId))).map((task) => [task.id, task]))
    const { owner: _owner, rev: _rev, ...rest } = plan
    return { ...rest, steps: stepViews(version, tasks) }
  }
  let starting: Promise<void> | undefined
  const ready = () => (starting ??= options.tasks.start().then(() => (options.run === false ? undefined : engine.start())))
  /**
   * Resolves at the plan's next event here (only its own transitions with `planOnly`; else a step moving too), at
   * another node's write of it, or after a tick (another process may be moving its steps).
   */
  const nextChange = (id: string, waitMs: number, planOnly = false) =>
    new Promise<Ended | undefined>((resolve) => {
      const timer = setTimeout(done, Math.max(0, Math.min(tickMs, waitMs)))
      timer.unref()
      // Ended by this process's engine: the plan as it wrote it (an ended plan never changes), no read needed.
      const stopWritten = engine.onWritten((plan, tasks) => plan.id === id && isPlanFinal(plan.state) && done({ plan, tasks }))
      const stopEvents = engine.onEvent((event) => event.planId === id && (!planOnly || event.type === 'plan') && done())
      const stopSteps = planOnly ? () => undefined : engine.onStepMoved((planId) => planId === id && done())
      // Another node's write of the plan (a store several machines share): heard at once, not at the next tick.
      const stopWatch = store.watch?.((planId, kind) => planId === id && (!planOnly || kind === 'write') && done()) ?? (() => undefined)
      function done(ended?: Ended) {
        clearTimeout(timer)
        stopWritten()
        stopEvents()
        stopSteps()
        stopWatch()
        resolve(ended)
      }
    })
  return {
    async run(spec, caller) {
      await ready()
      const submitter = { tenant: tenantOf(caller), ...(caller?.profile ? { profile: caller.profile } : {}) }
      const { plan, tasks } = await engine.submit(spec, submitter)
      // Answered as submitted: its steps as their insert stored them (PENDING, or an idempotent step found stored).
      return view(plan, new Map(tasks.map((task) => [task.id, task])), true)
    },
    async get(id, caller) {
      const plan = await store.get(id)
      return plan && plan.tenant === tenantOf(caller) ? view(plan) : undefined
    },
    async wait(id, waitOptions = {}) {
      await ready()
      const until = Date.now() + (waitOptions.timeoutMs ?? Number.POSITIVE_INFINITY)
      let ended: Ended | undefined
      let first = true
      for (;;) {
        // The plan as this process's engine ended it (the caller's own, like a read of it): answered without a read.
        if (ended && ended.plan.tenant === tenantOf(waitOptions)) return view(ended.plan, ended.tasks)
        // Listening before reading: an event landing between the read and the wait is not missed.
        // Only the plan's own transitions can end it: its steps' do not need a look.
        const changed = nextChange(id, until - Date.now(), true)
        // At first, the plan as this engine last saw it (a plan just run here): not ended, the caller's, and every
        // write of it here from now on is heard. A write by another node heard before listening waits for a tick.
        const seen = first ? engine.seen(id) : undefined
        first = false
        const plan = seen && seen.tenant === tenantOf(waitOptions) ? seen : await owned(id, waitOptions)
        // Suspended, like a task: it waits for a person now, not for its steps.
        if (isPlanFinal(plan.state) || plan.state === 'SUSPENDED' || Date.now() >= until) return view(plan)
        ended = await changed
      }
    },
    async cancel(id, caller) {
      await ready()
      const plan = await owned(id, caller)
      const ended = await engine.cancel(id)
      if (!ended)
        throw new ExecgateError('EXECGATE_PLAN_CONFLICT', { id, state: (await store.get(id))?.state ?? plan.state, action: 'cancelled' })
      return view(ended)
    },
    async suspend(id, caller) {
      await ready()
      const plan = await owned(id, caller)
      const suspended = await engine.suspend(id)
      if (!suspended)
        throw new ExecgateError('EXECGATE_PLAN_CONFLICT', {
          id,
          state: (await store.get(id))?.state ?? plan.state,
          action: 'suspended (only RUNNING plans can)',
        })
      return view(suspended)
    },
    async resume(id, changes = {}, caller) {
      assertResumeChanges(changes)
      await ready()
      const plan = await owned(id, caller)
      await applyResumeChanges(plan, changes, options.taskStore, options.check)
      const resumed = await engine.resume(id, resumeReason(changes))
      if (!resumed)
        throw new ExecgateError('EXECGATE_PLAN_CONFLICT', {
          id,
          state: (await store.get(id))?.state ?? plan.state,
          action: 'resumed (only SUSPENDED plans can)',
        })
      return view(resumed)
    },
    async list(filter = {}, caller) {
      const page = await store.list({ ...filter, tenant: tenantOf(caller) })
      const summaries = page.plans.map((plan) => ({
        id: plan.id,
        ...(plan.goal ? { goal: plan.goal } : {}),
        state: plan.state,
        reason: plan.reason,
        version: plan.version,
        steps: currentVersion(plan).steps.length,
        revisions: plan.revisions.length,
        maxRevisions: plan.maxRevisions,
        ...(plan.failedStep ? { failedStep: plan.failedStep } : {}),
        createdAt: plan.createdAt,
        updatedAt: plan.updatedAt,
      }))
      return { plans: summaries, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) }
    },
    async *events(id, eventOptions = {}) {
      await owned(id, eventOptions)
      let last = eventOptions.afterSeq ?? 0
      let ended = false
      const outputs: PlanOutputEvent[] = []
      // Outputs sent, by task, attempt and index: an item heard live and again from the stored result goes out once.
      const sent = new Set<string>()
      function* drain(): Generator<PlanOutputEvent> {
        while (outputs.length) {
          const item = outputs.shift()!
          const key = outputKey(item)
          if (sent.has(key)) continue
          sent.add(key)
          yield item
        }
      }
      let wake = () => undefined as void
      const stopOutputs = options.tasks.scheduler.outputs.subscribe((item) => {
        if (item.planId !== id || !item.stepId) return
        const { taskId, stepId, attempt, index, output } = item
        outputs.push({ type: 'output', planId: id, stepId, taskId, attempt, index, output })
        wake()
      })
      try {
        for (;;) {
          const changed = nextChange(id, tickMs)
          const woken = new Promise<void>((resolve) => (wake = resolve))
          yield* drain()
          // Steps' transitions reach the plan's log when the plan has something to decide; a live reader wants them now.
          await engine.catchUp(id)
          const events = await store.events(id, last)
          for (const event of events) {
            // A late reader (or one on a node the item was relayed to after the run's end) was not sent some of the
            // run's outputs live: its stored result has them all.
            if (event.type === 'step' && event.from === 'RUNNING' && runEnded(event.to))
              outputs.push(...(await unsentStepOutputs(options.taskStore, event, sent)))
            // A step's outputs were made before its task's end was written, so before any event that follows from it.
            yield* drain()
            last = event.seq
            yield event
            if (event.type === 'plan' && isPlanFinal(event.to)) return
          }
          // Resumed past the plan's end (Last-Event-ID): one more read for what landed meanwhile, then done.
          if (ended) return
          if (events.length === 0) ended = isPlanFinal((await store.get(id))?.state ?? 'TERMINATED')
          if (!ended) await Promise.race([changed, woken])
        }
      } finally {
        stopOutputs()
      }
    },
    start: () => ready(),
    async close() {
      if (starting) await starting.catch(() => undefined)
      await engine.stop()
      await store.close()
    },
  }
}

const outputKey = (item: Pick<PlanOutputEvent, 'taskId' | 'attempt' | 'index'>) => `${item.taskId}:${item.attempt}:${item.index}`

/** A run's end that stores its result: the task ended, or was suspended (resource exhaustion) with it. */
const runEnded = (state: TaskState) => isFinal(state) || state === 'SUSPENDED'

/** The rich outputs of the step's run that ended with `event` and were not sent yet, from its task's stored result. */
async function unsentStepOutputs(
  tasks: TaskReader,
  event: Extract<PlanEvent, { type: 'step' }>,
  sent: ReadonlySet<string>,
): Promise<PlanOutputEvent[]> {
  const [task] = await tasks.getMany([event.taskId])
  // A later attempt's result is not this run's (the step was resumed and ran again since).
  if (!task?.result?.outputs || task.attempts !== event.attempt) return []
  const { planId, stepId, taskId, attempt } = event
  return task.result.outputs.flatMap((output, index) =>
    sent.has(outputKey({ taskId, attempt, index })) ? [] : [{ type: 'output' as const, planId, stepId, taskId, attempt, index, output }],
  )
}
