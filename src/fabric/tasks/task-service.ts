import { ExecgateError, type ExecutionRequest, type ValidationReport } from '../../core'
import type { FabricStoreKind } from '../../config/store-kinds'
import type { ExecuteOptions } from '../../execution/types'
import type { Logger } from '../../observability/logger'
import { storeDriver, type FabricStoreSettings } from '../drivers'
import type { TaskDispatcher } from './bullmq-dispatcher'
import type { OutputRelay } from './output-relay'
import { assertResumeChanges, callerOptions, requestRefusal, withLoosestTimeout } from './request-refusal'
import { TaskScheduler, type ExecuteFunction, type ResumeChanges, type TaskSchedulerOptions, type TaskStreamItem } from './task-scheduler'
import type { TaskListFilter, TaskPage, TaskStore } from './task-store'
import type { Submitter } from './task-submission'
import { findTaskProblem } from './task-schema'
import type { Task, TaskSpec } from './task-types'

export { TASKS_SQLITE_FILE_NAME as SQLITE_FILE_NAME } from './sqlite-task-store'

/** Who is asking: every call names a tenant, and a tenant only ever sees its own tasks. */
export interface TaskCaller {
  /** @default 'local' (the library's and CLI's own tenant) */
  tenant?: string
  /** The policy profile the tenant's tasks run under. */
  profile?: string
}

/** Durable tasks, as the library offers them (`execgate.tasks`); HTTP, MCP and the CLI call the same. */
export interface TaskService {
  submit(spec: TaskSpec, caller?: TaskCaller): Promise<Task>
  /** Submits tasks that may depend on each other (by the ids they choose) in one atomic write. */
  submitMany(specs: readonly TaskSpec[], caller?: TaskCaller): Promise<Task[]>
  get(id: string, caller?: TaskCaller): Promise<Task | undefined>
  /** Until the task ends or is suspended; at `timeoutMs` it returns the task as it is. */
  wait(id: string, options?: TaskCaller & { timeoutMs?: number }): Promise<Task>
  cancel(id: string, caller?: TaskCaller): Promise<Task>
  suspend(id: string, caller?: TaskCaller): Promise<Task>
  resume(id: string, changes?: ResumeChanges, caller?: TaskCaller): Promise<Task>
  list(filter?: Omit<TaskListFilter, 'tenant'>, caller?: TaskCaller): Promise<TaskPage>
  /** The task's transitions (its action log, then live) and its output while it runs here, until it ends. */
  events(id: string, options?: TaskCaller & { afterSeq?: number }): AsyncGenerator<TaskStreamItem>
  /** Starts running tasks now (recovering what a crashed process left) instead of at the first call. */
  start(): Promise<void>
  /** Stops starting tasks, waits for runs in flight (or cancels them with `abort`) and closes the store. */
  close(options?: { abort?: boolean }): Promise<void>
  readonly scheduler: TaskScheduler
}

export interface TaskServiceOptions {
  execute: ExecuteFunction
  /** A store to use; otherwise the one `backend` names. */
  store?: TaskStore
  /** With `store`: how due tasks reach processes (the distributed store's dispatcher). */
  dispatcher?: TaskDispatcher
  /** With `store`: how runs' rich outputs reach readers in other processes (the distributed store's pub/sub). */
  outputRelay?: OutputRelay
  /**
   * The store to open when none is given, by its driver (src/fabric/drivers): the embedded one in `dataDir` (default),
   * or Redis with BullMQ at `url`, keys under `prefix`.
   */
  backend?: { kind: FabricStoreKind; url?: string; prefix?: string; leaseMs?: number }
  /** `fabric.dataDir`. */
  dataDir?: string
  concurrency?: number
  tickMs?: number
  logger?: Logger
  /** This scheduler's name in the runs it holds (one per execgate: src/fabric/owner-id.ts). */
  owner?: string
  /** Run tasks in this process (false: only submit and read, e.g. the CLI without --wait). @default true */
  run?: boolean
  /** Opens the bucket workspace of a task that keeps one (a plan step's, `fabric.plans.workspaces: s3`). */
  workspaceFor?: TaskSchedulerOptions['workspaceFor']
  /**
   * The ExecutionService's `check`: what a run would refuse before anything runs, for its caller. With it a task
   * whose request loosens the caller's policy profile, or is malformed, is refused at submit (`EXECGATE_SUBMIT_REFUSED`,
   * nothing stored), and a resume whose request (the task's, with the changes) does is refused at the resume
   * (`EXECGATE_RESUME_REFUSED`, the task stays SUSPENDED); without it such a run ends `policy_violation`.
   */
  check?: (request: ExecutionRequest, options: ExecuteOptions) => ValidationReport
  /**
   * The ExecutionService's `isRepeatable`: a task whose run it finds repeatable is begun before the write that starts it
   * (TaskRunner.early), the write and the run's way to its engine overlapping. Without it no run is begun early.
   */
  isRepeatable?: (request: ExecutionRequest, options: ExecuteOptions) => boolean
}

const DEFAULT_TENANT = 'local'

/** The `fabric` config keys a task service is opened from (so the library, `serve` and the CLI open the same store). */
export interface FabricSettings extends FabricStoreSettings {
  store: FabricStoreKind
  concurrency: number
}

/** What `backend` and `dataDir` name, as the settings a store driver opens from. */
function driverSettings(options: Pick<TaskServiceOptions, 'backend' | 'dataDir'>): FabricStoreSettings {
  const backend = options.backend
  return {
    dataDir: options.dataDir ?? '.execgate',
    redisUrl: backend?.url ?? 'redis://127.0.0.1:6379',
    redisPrefix: backend?.prefix ?? 'execgate',
    leaseMs: backend?.leaseMs ?? 30_000,
  }
}

function openStore(options: TaskServiceOptions): { store: TaskStore; dispatcher?: TaskDispatcher; outputRelay?: OutputRelay } {
  if (options.store)
    return {
      store: options.store,
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
      ...(options.outputRelay ? { outputRelay: options.outputRelay } : {}),
    }
  const driver = storeDriver(options.backend?.kind ?? 'sqlite')
  const settings = driverSettings(options)
  const store = driver.tasks(settings)
  const dispatcher = driver.taskDispatcher(settings, store)
  const outputRelay = driver.outputRelay?.(settings)
  return { store, ...(dispatcher ? { dispatcher } : {}), ...(outputRelay ? { outputRelay } : {}) }
}

/**
 * Durable tasks over a store. Nothing runs until first use: the first call recovers what a crashed process left and
 * starts the scheduler (unless `run` is false), so creating the service costs an open file and nothing more.
 */
export function createTaskService(options: TaskServiceOptions): TaskService {
  const { store, dispatcher, outputRelay } = openStore(options)
  const { isRepeatable } = options
  const scheduler = new TaskScheduler({
    store,
    dispatcher,
    ...(outputRelay ? { outputRelay } : {}),
    execute: options.execute,
    logger: options.logger,
    concurrency: options.concurrency,
    tickMs: options.tickMs,
    workspaceFor: options.workspaceFor,
    ...(options.owner ? { owner: options.owner } : {}),
    ...(isRepeatable ? { repeatable: (task: Task) => isRepeatable(task.request, callerOptions(task)) } : {}),
  })
  const submitter = (caller: TaskCaller = {}): Submitter => ({
    tenant: caller.tenant ?? DEFAULT_TENANT,
    ...(caller.profile ? { profile: caller.profile } : {}),
  })
  // Another tenant's task answers exactly like a missing one, so ids never leak across tenants.
  const ownedOrThrow = (id: string, task: Task | undefined, caller: TaskCaller = {}): Task => {
    if (!task || task.tenant !== submitter(caller).tenant)
      throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no task "${id}" for tenant ${submitter(caller).tenant}` })
    return task
  }
  const owned = async (id: string, caller: TaskCaller = {}): Promise<Task> => ownedOrThrow(id, await store.get(id), caller)
  const conflict = (task: Task, action: string) => new ExecgateError('EXECGATE_TASK_CONFLICT', { id: task.id, state: task.state, action })
  // Checked as the run would be (the task's profile and workspace grant), before the task moves.
  const refuseLoosening = (task: Task, changes: ResumeChanges = {}) => {
    if (!options.check || task.state !== 'SUSPENDED') return
    const reason = requestRefusal(options.check, { ...task.request, ...changes }, task)
    if (reason) throw new ExecgateError('EXECGATE_RESUME_REFUSED', { subject: `task ${task.id}`, reason })
  }
  // A task its runs would refuse for its limits is refused now, before anything of the batch is stored. True when it
  // found every spec valid against the schema, so the scheduler need not check them again (a check is µs a task).
  const refuseSubmission = (specs: readonly TaskSpec[], caller: TaskCaller | undefined): boolean => {
    if (!options.check || !Array.isArray(specs)) return false
    const who = submitter(caller)
    let allValid = true
    specs.forEach((spec, index) => {
      // The schema's problems are prepareTasks' to name (EXECGATE_REQUEST_INVALID), in their own words.
      if (findTaskProblem(spec)) {
        allValid = false
        return
      }
      const reason = requestRefusal(options.check!, withLoosestTimeout(spec), who)
      if (reason) throw new ExecgateError('EXECGATE_SUBMIT_REFUSED', { subject: specs.length > 1 ? `tasks[${index}]` : 'the task', reason })
    })
    return allValid
  }
  let starting: Promise<void> | undefined
  const ready = () => (options.run === false ? Promise.resolve() : (starting ??= scheduler.start()))
  const service: TaskService = {
    scheduler,
    async submit(spec, caller) {
      const schemaChecked = refuseSubmission([spec], caller)
      await ready()
      return (await scheduler.submit([spec], submitter(caller), schemaChecked))[0]!
    },
    async submitMany(specs, caller) {
      const schemaChecked = refuseSubmission(specs, caller)
      await ready()
      return scheduler.submit(specs, submitter(caller), schemaChecked)
    },
    async get(id, caller) {
      const task = await store.get(id)
      return task && task.tenant === submitter(caller).tenant ? task : undefined
    },
    async wait(id, waitOptions = {}) {
      await ready()
      // The ownership check on the wait's own first read (made after it listens, so nothing is missed): one read.
      return (await scheduler.wait(id, waitOptions.timeoutMs, (task) => ownedOrThrow(id, task, waitOptions)))!
    },
    async cancel(id, caller) {
      const task = await owned(id, caller)
      return (await scheduler.cancel(id)) ?? Promise.reject(conflict(task, 'cancelled'))
    },
    async suspend(id, caller) {
      const task = await owned(id, caller)
      return (await scheduler.suspend(id)) ?? Promise.reject(conflict(task, 'suspended (only PENDING and RUNNING tasks can)'))
    },
    async resume(id, changes, caller) {
      assertResumeChanges(changes)
      await ready()
      const task = await owned(id, caller)
      refuseLoosening(task, changes)
      return (await scheduler.resume(id, changes)) ?? Promise.reject(conflict(task, 'resumed (only SUSPENDED tasks can)'))
    },
    list: (filter = {}, caller) => store.list({ ...filter, tenant: submitter(caller).tenant }),
    async *events(id, eventOptions = {}) {
      await owned(id, eventOptions)
      yield* scheduler.events(id, eventOptions.afterSeq)
    },
    async start() {
      await ready()
    },
    async close(closeOptions) {
      if (starting) await starting.catch(() => undefined)
      await scheduler.stop(closeOptions)
      await store.close()
    },
  }
  return service
}
