import { availableParallelism } from 'node:os'
import { performance } from 'node:perf_hooks'
import {
  ExecgateError,
  errorResult,
  refusal,
  type CodeExecutionAdapter,
  type ExecutionRequest,
  type ExecutionResult,
  type Lane,
  type SecurityPolicy,
} from '../../core'
import { reservedSlots, resolveLane, type TenantAdmission } from './lanes'
import { checkAgentTypeLimits, checkCpuQuota, checkEgressQuota, tenantEgressQuota, TenantUsage, type AgentTypeProfile } from './quotas'
import type { EgressQuota } from '../../egress'
import { SlotPool } from './slot-pool'
import { WaitQueue } from './wait-queue'

export interface AdmissionOptions {
  /** Lane of a request that names none and whose tenant sets none. */
  defaultLane: Lane
  /** Share of each adapter's slots only interactive runs may take (0 to 1). */
  interactiveShare: number
  /** Batch runs at once across the in-process tiers (1 and 3), which share this machine's cores; 0: one per core. */
  inProcessBatchRuns: number
  /** Runs that may wait per adapter and lane; one more is refused at once. */
  queueLimits: Readonly<Record<Lane, number>>
  /** The retry hint given with a full queue or a shutdown. */
  retryAfterMs: number
  tenants: Readonly<Record<string, TenantAdmission>>
  agentTypes: Readonly<Record<string, AgentTypeProfile>>
}

/** Who asks: the tenant (HTTP API key, or the library caller's own name) and its cancel signal. */
export interface AdmissionCaller {
  tenant?: string
  signal?: AbortSignal
}

/**
 * A granted slot. `release` must be called once the run is over, with the CPU (or wall) ms it used and what it moved
 * through the egress gateway.
 */
export interface AdmissionTicket {
  readonly lane: Lane
  readonly priority: number
  readonly queuedMs: number
  /** `performance.now()` when the run may start: its time limit counts from here. */
  readonly startedAt: number
  /** The tenant's egress quotas, live: the run's gateway counts into them and refuses once they are spent. */
  readonly egressQuota?: EgressQuota
  release(cpuMs: number): void
}

export interface AdapterAdmissionStatus {
  adapter: string
  /** Slots the adapter declares (`capabilities.concurrency`); null when it declares none (unbounded). */
  slots: number | null
  reserved: number
  inUse: Record<Lane, number>
  queued: Record<Lane, number>
}

export interface AdmissionStatus {
  inProcessBatch: { limit: number; inUse: number }
  adapters: AdapterAdmissionStatus[]
}

interface Waiter {
  priority: number
  lane: Lane
  tenant: string | undefined
  agentType: string | undefined
  enqueuedAt: number
  grant: (ticket: AdmissionTicket | ExecutionResult) => void
}

interface AdapterState {
  pool: SlotPool
  inProcess: boolean
  queues: Record<Lane, WaitQueue<Waiter>>
}

const SERVICE = 'execgate'

/**
 * Admission for every run (DESIGN.md: before step 5): a lane, a slot of the routed adapter, quotas. Interactive
 * waiters are always served before batch ones; batch never takes an adapter's reserved share, nor more in-process
 * runs at once than `inProcessBatchRuns`. Nothing waits unbounded: queues have limits, waiters their deadlines.
 */
export class AdmissionController {
  private readonly adapters = new Map<string, AdapterState>()
  private readonly tenantUsage = new Map<string, TenantUsage>()
  private readonly agentRunning = new Map<string, number>()
  private readonly inProcessBatchLimit: number
  private inProcessBatchInUse = 0
  private closed = false
  private running = 0
  private idle: (() => void) | undefined
  private drained: Promise<void> | undefined

  constructor(
    private readonly options: AdmissionOptions,
    adapters: readonly CodeExecutionAdapter[] = [],
  ) {
    this.inProcessBatchLimit = options.inProcessBatchRuns > 0 ? options.inProcessBatchRuns : availableParallelism()
    for (const adapter of adapters) this.stateOf(adapter)
  }

  /**
   * A ticket to run `request` on `adapter` now or after a wait, or the result that refuses it. The answer itself
   * when it needs no wait (a free slot, a refusal: no promise for the trivial run to wait on), else a promise for
   * it, which never rejects.
   */
  acquire(
    adapter: CodeExecutionAdapter,
    request: ExecutionRequest,
    policy: SecurityPolicy,
    caller: AdmissionCaller = {},
  ): AdmissionTicket | ExecutionResult | Promise<AdmissionTicket | ExecutionResult> {
    if (this.closed) return this.shuttingDown()
    const tenantSettings = caller.tenant === undefined ? undefined : this.options.tenants[caller.tenant]
    const lane = resolveLane(request.lane, tenantSettings, this.options.defaultLane)
    const priority = request.priority ?? 0
    const agentType = request.agentType
    if (agentType !== undefined) {
      const profile = this.options.agentTypes[agentType]
      if (!profile)
        return errorResult(
          'invalid_request',
          SERVICE,
          new ExecgateError('EXECGATE_AGENT_TYPE_UNKNOWN', {
            name: agentType,
            known: Object.keys(this.options.agentTypes).join(', ') || 'none',
          }),
        )
      const over = checkAgentTypeLimits(agentType, profile, policy)
      if (over) return errorResult('policy_violation', SERVICE, over)
      const running = this.agentRunning.get(agentType) ?? 0
      if (profile.maxConcurrent !== undefined && running >= profile.maxConcurrent) {
        return this.refuse(
          new ExecgateError('EXECGATE_QUOTA_EXCEEDED', {
            quota: `admission.agentTypes.${agentType}.maxConcurrent`,
            detail: `agent type ${agentType} already has ${running} of its ${profile.maxConcurrent} concurrent runs`,
            retryAfter: this.retryAfterSeconds(),
          }),
        )
      }
    }
    const usage = caller.tenant === undefined ? undefined : this.usageOf(caller.tenant)
    const cpuOver = caller.tenant === undefined ? undefined : checkCpuQuota(caller.tenant, tenantSettings, usage)
    if (cpuOver) return this.refuse(cpuOver, Number(cpuOver.params.retryAfter) * 1000)
    const egressOver =
      caller.tenant === undefined || policy.network === 'none' ? undefined : checkEgressQuota(caller.tenant, tenantSettings, usage)
    if (egressOver) return this.refuse(egressOver, Number(egressOver.params.retryAfter) * 1000)
    const state = this.stateOf(adapter)
    const waiter: Waiter = { priority, lane, tenant: caller.tenant, agentType, enqueuedAt: performance.now(), grant: () => undefined }
    const ahead = state.queues.interactive.size + (lane === 'batch' ? state.queues.batch.size : 0)
    if (ahead === 0 && this.canStart(state, waiter)) return this.start(state, waiter)
    const queue = state.queues[lane]
    if (queue.full) {
      return this.refuse(
        new ExecgateError('EXECGATE_QUEUE_FULL', { lane, adapter: adapter.name, limit: queue.limit, retryAfter: this.retryAfterSeconds() }),
      )
    }
    const maxQueued = tenantSettings?.maxQueued
    if (usage && maxQueued !== undefined && usage.queued >= maxQueued) {
      return this.refuse(
        new ExecgateError('EXECGATE_QUOTA_EXCEEDED', {
          quota: `admission.tenants.${caller.tenant}.maxQueued`,
          detail: `tenant ${caller.tenant} already has ${usage.queued} runs waiting, its limit`,
          retryAfter: this.retryAfterSeconds(),
        }),
      )
    }
    return this.wait(queue, waiter, adapter.name, Math.min(request.maxQueueMs ?? Infinity, policy.wallTimeMs), caller.signal)
  }

  status(): AdmissionStatus {
    return {
      inProcessBatch: { limit: this.inProcessBatchLimit, inUse: this.inProcessBatchInUse },
      adapters: [...this.adapters].map(([name, state]) => ({
        adapter: name,
        slots: Number.isFinite(state.pool.capacity) ? state.pool.capacity : null,
        reserved: state.pool.reserved,
        inUse: { interactive: state.pool.inUse('interactive'), batch: state.pool.inUse('batch') },
        queued: { interactive: state.queues.interactive.size, batch: state.queues.batch.size },
      })),
    }
  }

  /**
   * Graceful shutdown: no new admissions; every waiter is answered `unavailable` with a retry hint at once, and the
   * promise settles when the runs already started have finished (each is bounded by its own deadline).
   */
  async close(): Promise<void> {
    this.closed = true
    for (const state of this.adapters.values()) {
      for (const waiter of [...state.queues.interactive.drain(), ...state.queues.batch.drain()]) {
        if (waiter.tenant !== undefined) this.usageOf(waiter.tenant).queued -= 1
        waiter.grant(this.shuttingDown())
      }
    }
    // One promise for every caller: a second close must not replace the first one's resolver.
    this.drained ??= this.running === 0 ? Promise.resolve() : new Promise<void>((resolve) => (this.idle = resolve))
    await this.drained
  }

  private wait(
    queue: WaitQueue<Waiter>,
    waiter: Waiter,
    adapterName: string,
    boundMs: number,
    signal: AbortSignal | undefined,
  ): Promise<AdmissionTicket | ExecutionResult> {
    return new Promise((resolve) => {
      const leave = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        if (waiter.tenant !== undefined) this.usageOf(waiter.tenant).queued -= 1
      }
      // The run never started: its deadline (its time limit, or its own queue bound) passed while it waited.
      const timer = setTimeout(() => {
        if (!queue.remove(waiter)) return
        leave()
        const waitedMs = Math.round(performance.now() - waiter.enqueuedAt)
        resolve(
          errorResult(
            'timeout',
            SERVICE,
            new ExecgateError('EXECGATE_QUEUE_TIMEOUT', { waitedMs, lane: waiter.lane, adapter: adapterName, boundMs }),
            { retryAfterMs: this.options.retryAfterMs },
          ),
        )
      }, boundMs)
      const onAbort = () => {
        if (!queue.remove(waiter)) return
        leave()
        resolve(
          refusal(
            'cancelled',
            SERVICE,
            `[execgate] the run was cancelled by the caller while it waited in the ${waiter.lane} ` +
              `queue for ${adapterName}; it never started`,
            'Cancelled',
          ),
        )
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      waiter.grant = (ticket) => {
        leave()
        resolve(ticket)
      }
      if (waiter.tenant !== undefined) this.usageOf(waiter.tenant).queued += 1
      queue.push(waiter)
      // A waiter held back only by its tenant's concurrency must not hold back the ones behind it.
      this.pump()
    })
  }

  private canStart(state: AdapterState, waiter: Waiter): boolean {
    if (!state.pool.canTake(waiter.lane)) return false
    if (waiter.lane === 'batch' && state.inProcess && this.inProcessBatchInUse >= this.inProcessBatchLimit) return false
    // An agent type's runs that queued while under its count must still not start past it.
    const agentMax = waiter.agentType === undefined ? undefined : this.options.agentTypes[waiter.agentType]?.maxConcurrent
    if (agentMax !== undefined && (this.agentRunning.get(waiter.agentType!) ?? 0) >= agentMax) return false
    const maxConcurrent = waiter.tenant === undefined ? undefined : this.options.tenants[waiter.tenant]?.maxConcurrent
    return maxConcurrent === undefined || this.usageOf(waiter.tenant!).running < maxConcurrent
  }

  private start(state: AdapterState, waiter: Waiter): AdmissionTicket {
    const { lane, tenant, agentType } = waiter
    const batchInProcess = lane === 'batch' && state.inProcess
    state.pool.take(lane)
    if (batchInProcess) this.inProcessBatchInUse += 1
    if (tenant !== undefined) this.usageOf(tenant).running += 1
    if (agentType !== undefined) this.agentRunning.set(agentType, (this.agentRunning.get(agentType) ?? 0) + 1)
    this.running += 1
    const startedAt = performance.now()
    const egressQuota = tenant === undefined ? undefined : tenantEgressQuota(tenant, this.options.tenants[tenant], this.usageOf(tenant))
    let released = false
    return {
      lane,
      priority: waiter.priority,
      queuedMs: startedAt - waiter.enqueuedAt,
      startedAt,
      ...(egressQuota ? { egressQuota } : {}),
      release: (cpuMs) => {
        if (released) return
        released = true
        state.pool.release(lane)
        if (batchInProcess) this.inProcessBatchInUse -= 1
        if (tenant !== undefined) {
          const usage = this.usageOf(tenant)
          usage.running -= 1
          usage.record(cpuMs)
        }
        if (agentType !== undefined) this.agentRunning.set(agentType, (this.agentRunning.get(agentType) ?? 1) - 1)
        this.running -= 1
        this.pump()
        if (this.running === 0) this.idle?.()
      },
    }
  }

  /**
   * After a release or an arrival: interactive waiters first on every adapter, then batch (a freed in-process token
   * may suit any adapter's). Interactive waiters still queued after their pass are held by a full pool or their own
   * quota, so batch may take what is left outside the reservation without delaying them.
   */
  private pump(): void {
    for (const lane of ['interactive', 'batch'] as const) {
      for (const state of this.adapters.values()) {
        const queue = state.queues[lane]
        for (
          let waiter = queue.takeFirst((item) => this.canStart(state, item));
          waiter;
          waiter = queue.takeFirst((item) => this.canStart(state, item))
        ) {
          waiter.grant(this.start(state, waiter))
        }
      }
    }
  }

  private stateOf(adapter: CodeExecutionAdapter): AdapterState {
    let state = this.adapters.get(adapter.name)
    if (!state) {
      const capacity = adapter.capabilities.concurrency ?? Infinity
      state = {
        pool: new SlotPool(capacity, Number.isFinite(capacity) ? reservedSlots(capacity, this.options.interactiveShare) : 0),
        // Tiers 1 and 3 run on this process's machine in threads or child processes that compete for its cores.
        inProcess: adapter.capabilities.tier === 1 || adapter.capabilities.tier === 3,
        queues: { interactive: new WaitQueue(this.options.queueLimits.interactive), batch: new WaitQueue(this.options.queueLimits.batch) },
      }
      this.adapters.set(adapter.name, state)
    }
    return state
  }

  private usageOf(tenant: string): TenantUsage {
    let usage = this.tenantUsage.get(tenant)
    if (!usage) this.tenantUsage.set(tenant, (usage = new TenantUsage()))
    return usage
  }

  private retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.options.retryAfterMs / 1000))
  }

  private refuse(error: ExecgateError, retryAfterMs = this.retryAfterSeconds() * 1000): ExecutionResult {
    return errorResult('unavailable', SERVICE, error, { retryAfterMs })
  }

  private shuttingDown(): ExecutionResult {
    return this.refuse(new ExecgateError('EXECGATE_SHUTTING_DOWN'))
  }
}
