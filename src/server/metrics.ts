import client from 'prom-client'
import { LANES, type ExecutionListener, type ExecutionRequest, type ExecutionResult } from '../core'
import type { Execgate } from '../index'

const ADMISSION_REFUSALS = new Set([
  'EXECGATE_QUEUE_FULL',
  'EXECGATE_QUEUE_TIMEOUT',
  'EXECGATE_QUOTA_EXCEEDED',
  'EXECGATE_QUOTA_LIMIT',
  'EXECGATE_AGENT_TYPE_UNKNOWN',
  'EXECGATE_SHUTTING_DOWN',
])

/**
 * prom-client metrics for one server (its own registry, so several servers in one process do not collide). It is
 * an `ExecutionListener`: the server binds it in the execgate's container, so it counts every result.
 */
export class ServerMetrics implements ExecutionListener {
  readonly registry = new client.Registry()
  private readonly executions = new client.Counter({
    name: 'execgate_executions_total',
    help: 'Executions by adapter, language and status',
    labelNames: ['adapter', 'language', 'status'],
    registers: [this.registry],
  })
  private readonly duration = new client.Histogram({
    name: 'execgate_execution_duration_seconds',
    help: 'Execution duration by adapter',
    labelNames: ['adapter'],
    buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [this.registry],
  })
  private readonly fallbacks = new client.Counter({
    name: 'execgate_fallbacks_total',
    help: 'Requests rerouted off an adapter',
    labelNames: ['from', 'to'],
    registers: [this.registry],
  })
  private readonly rejected = new client.Counter({
    name: 'execgate_rejected_requests_total',
    help: 'Requests refused before running, by reason',
    labelNames: ['reason'],
    registers: [this.registry],
  })
  private readonly queueWait = new client.Histogram({
    name: 'execgate_admission_wait_seconds',
    help: 'Time runs waited for a slot, by lane',
    labelNames: ['lane'],
    buckets: [0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [this.registry],
  })
  private readonly switches = new client.Counter({
    name: 'execgate_adapter_switches_total',
    help: 'Active adapter switches by the readiness monitor',
    registers: [this.registry],
  })

  constructor(execgate: Execgate) {
    client.collectDefaultMetrics({ register: this.registry, prefix: 'execgate_process_' })
    new client.Gauge({
      name: 'execgate_adapter_health',
      help: 'Adapter health: 1 available, 0.5 degraded, 0 unavailable, -1 not checked yet',
      labelNames: ['adapter'],
      registers: [this.registry],
      collect() {
        for (const adapter of execgate.status().adapters) {
          const value = { available: 1, degraded: 0.5, unavailable: 0, unknown: -1 }[adapter.health.state]
          this.set({ adapter: adapter.name }, value)
        }
      },
    })
    new client.Gauge({
      name: 'execgate_admission_queue_depth',
      help: 'Runs waiting for a slot, by adapter and lane',
      labelNames: ['adapter', 'lane'],
      registers: [this.registry],
      collect() {
        for (const item of execgate.status().admission.adapters)
          for (const lane of LANES) this.set({ adapter: item.adapter, lane }, item.queued[lane])
      },
    })
    new client.Gauge({
      name: 'execgate_admission_slots_in_use',
      help: 'Slots in use, by adapter and lane',
      labelNames: ['adapter', 'lane'],
      registers: [this.registry],
      collect() {
        for (const item of execgate.status().admission.adapters)
          for (const lane of LANES) this.set({ adapter: item.adapter, lane }, item.inUse[lane])
      },
    })
    // The ledger's write queue: records heard and not yet written, and records lost (queue full, writer thread died).
    new client.Gauge({
      name: 'execgate_ledger_queue_depth',
      help: 'Ledger records heard and not yet written (bounded by fabric.ledger.queueLimit)',
      registers: [this.registry],
      collect() {
        this.set(execgate.ledger.stats?.().queued ?? 0)
      },
    })
    new client.Counter({
      name: 'execgate_ledger_records_lost_total',
      help: 'Ledger records lost: the write queue was full (the writer fell behind or the store was down), or the writer thread died',
      registers: [this.registry],
      collect() {
        const lost = execgate.ledger.stats?.().lost ?? 0
        this.reset()
        this.inc(lost)
      },
    })
    new client.Counter({
      name: 'execgate_ledger_records_written_total',
      help: 'Ledger records written',
      registers: [this.registry],
      collect() {
        const written = execgate.ledger.stats?.().written ?? 0
        this.reset()
        this.inc(written)
      },
    })
    new client.Gauge({
      name: 'execgate_active_sessions',
      help: 'Open sessions (none until sessions exist)',
      registers: [this.registry],
      collect() {
        this.set(0)
      },
    })
    execgate.readiness.on('switch', () => this.switches.inc())
  }

  onResult(result: ExecutionResult, request: ExecutionRequest): void {
    this.recordResult(result, typeof request?.language === 'string' ? request.language : 'unknown')
  }

  recordResult(result: ExecutionResult, language: string): void {
    this.executions.inc({ adapter: result.adapter, language, status: result.status })
    this.duration.observe({ adapter: result.adapter }, result.durationMs / 1000)
    if (result.fallbackFrom) this.fallbacks.inc({ from: result.fallbackFrom.adapter, to: result.adapter })
    if (result.admission) this.queueWait.observe({ lane: result.admission.lane }, result.admission.queuedMs / 1000)
    const code = result.error?.code
    // Admission's refusals (queue full, quota, never started in time, shutdown) count as rejections by reason.
    if (code && ADMISSION_REFUSALS.has(code)) this.rejected.inc({ reason: code.replace(/^EXECGATE_/, '').toLowerCase() })
  }

  recordRejected(reason: string): void {
    this.rejected.inc({ reason })
  }
}
