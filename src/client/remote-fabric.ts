import type {
  ListOptions,
  PlanStreamItem,
  PlanSpec,
  PlanState,
  PlanSummary,
  PlanView,
  ResumeChanges,
  Task,
  TaskEvent,
  TaskSpec,
  TaskState,
  TaskStreamEvent,
} from './client-types'
import type { Output } from '../core'
import { ExecgateClientError } from './client-error'
import type { CallOptions, HttpTransport } from './http-transport'

/** Event streams resume after an event already seen (its `seq`), as `Last-Event-ID` says. */
export interface EventStreamOptions extends CallOptions {
  afterSeq?: number
}

const resumeHeader = (options: EventStreamOptions) => ({
  ...options,
  headers: { ...options.headers, ...(options.afterSeq ? { 'last-event-id': String(options.afterSeq) } : {}) },
})

/** `client.tasks`: durable tasks (docs/tasks.md), the same calls as the library's `execgate.tasks`. */
export class RemoteTasks {
  constructor(private readonly http: HttpTransport) {}

  submit(spec: TaskSpec, options: CallOptions & { idempotencyKey?: string } = {}): Promise<Task> {
    const headers = { ...options.headers, ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}) }
    return this.http.json<Task>('submitTask', { json: spec }, { ...options, headers })
  }

  /** The task, or undefined when this tenant has no such task. */
  async get(id: string, options?: CallOptions): Promise<Task | undefined> {
    return notFoundAsUndefined(this.http.json<Task>('getTask', { params: { id } }, options))
  }

  list(
    filter: ListOptions<TaskState> & { intentId?: string } = {},
    options?: CallOptions,
  ): Promise<{ tasks: Task[]; nextCursor?: string }> {
    return this.http.json('listTasks', { query: { ...filter } }, options)
  }

  cancel(id: string, options?: CallOptions): Promise<Task> {
    return this.http.json<Task>('cancelTask', { params: { id } }, options)
  }

  suspend(id: string, options?: CallOptions): Promise<Task> {
    return this.http.json<Task>('suspendTask', { params: { id } }, options)
  }

  resume(id: string, changes: ResumeChanges = {}, options?: CallOptions): Promise<Task> {
    return this.http.json<Task>('resumeTask', { params: { id }, json: changes }, options)
  }

  /** The task's action log, then its transitions and output live, until it ends. */
  async *events(id: string, options: EventStreamOptions = {}): AsyncGenerator<TaskStreamEvent> {
    for await (const message of this.http.events('taskEvents', { params: { id } }, resumeHeader(options))) {
      const data = JSON.parse(message.data) as TaskEvent & { chunk?: string; index?: number; attempt?: number; output?: Output }
      if (message.event === 'transition') yield { type: 'transition', event: data }
      else if (message.event === 'stdout' || message.event === 'stderr') yield { type: message.event, chunk: data.chunk ?? '' }
      else if (message.event === 'output' && data.output)
        yield { type: 'output', index: data.index ?? 0, attempt: data.attempt ?? 0, output: data.output }
    }
  }

  /** Follows the task's events until it ends (or is suspended) and answers it as it then is. */
  async wait(id: string, options: CallOptions = {}): Promise<Task> {
    for await (const event of this.events(id, options))
      if (event.type === 'transition' && ['COMPLETED', 'FAILED', 'TERMINATED', 'SUSPENDED'].includes(event.event.to)) break
    const task = await this.get(id, options)
    if (!task)
      throw new ExecgateClientError({
        code: 'EXECGATE_NOT_FOUND',
        message: `task ${id} disappeared while waiting`,
        status: 404,
        attempts: 1,
      })
    return task
  }
}

/** `client.plans`: plans of steps (docs/plans.md), the same calls as the library's `execgate.plans`. */
export class RemotePlans {
  constructor(private readonly http: HttpTransport) {}

  run(spec: PlanSpec, options?: CallOptions): Promise<PlanView> {
    return this.http.json<PlanView>('runPlan', { json: spec }, options)
  }

  async get(id: string, options?: CallOptions): Promise<PlanView | undefined> {
    return notFoundAsUndefined(this.http.json<PlanView>('getPlan', { params: { id } }, options))
  }

  list(filter: ListOptions<PlanState> = {}, options?: CallOptions): Promise<{ plans: PlanSummary[]; nextCursor?: string }> {
    return this.http.json('listPlans', { query: { ...filter } }, options)
  }

  cancel(id: string, options?: CallOptions): Promise<PlanView> {
    return this.http.json<PlanView>('cancelPlan', { params: { id } }, options)
  }

  suspend(id: string, options?: CallOptions): Promise<PlanView> {
    return this.http.json<PlanView>('suspendPlan', { params: { id } }, options)
  }

  /** `changes` go to the steps the plan held, each within the tenant's profile (else EXECGATE_RESUME_REFUSED). */
  resume(id: string, changes: ResumeChanges = {}, options?: CallOptions): Promise<PlanView> {
    return this.http.json<PlanView>('resumePlan', { params: { id }, json: changes }, options)
  }

  /**
   * The plan's log (plan and step transitions, revisions), then live, until it ends; its steps' rich outputs as made
   * (`type: 'output'`). */
  async *events(id: string, options: EventStreamOptions = {}): AsyncGenerator<PlanStreamItem> {
    for await (const message of this.http.events('planEvents', { params: { id } }, resumeHeader(options)))
      yield JSON.parse(message.data) as PlanStreamItem
  }

  /** Follows the plan's events until it ends (or is suspended) and answers it as it then is. */
  async wait(id: string, options: CallOptions = {}): Promise<PlanView> {
    for await (const event of this.events(id, options))
      if (event.type === 'plan' && ['COMPLETED', 'FAILED', 'TERMINATED', 'SUSPENDED'].includes(event.to)) break
    const plan = await this.get(id, options)
    if (!plan)
      throw new ExecgateClientError({
        code: 'EXECGATE_NOT_FOUND',
        message: `plan ${id} disappeared while waiting`,
        status: 404,
        attempts: 1,
      })
    return plan
  }
}

async function notFoundAsUndefined<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call
  } catch (error) {
    if ((error as { code?: unknown }).code === 'EXECGATE_NOT_FOUND') return undefined
    throw error
  }
}
