import { EventEmitter } from 'node:events'
import cron, { type ScheduledTask } from 'node-cron'
import { describeError, type AdapterRegistry, type Availability, type CodeExecutionAdapter } from '../core'
import type { Logger } from '../observability/logger'
import type { BreakerState, CircuitBreakers } from './circuit-breaker'
import { runCanaries } from './canaries'
import type { AdapterHealth, HealthBoard } from './health'

/** A change of the active adapter. `undefined` means routing picks the cheapest available adapter (`auto`). */
export interface SwitchEvent {
  from: string | undefined
  to: string | undefined
  reason: string
  /** ISO-8601 time. */
  at: string
}

/** An adapter's health changed state. */
export interface HealthEvent {
  adapter: string
  from: AdapterHealth['state']
  to: AdapterHealth['state']
  reason?: string
  at: string
}

export interface ReadinessEvents {
  switch: [SwitchEvent]
  health: [HealthEvent]
}

export interface ReadinessSettings {
  schedule: string
  timeoutMs: number
  canaries: boolean
  /** `execution.adapter`, or undefined for `auto`. */
  configuredAdapter: string | undefined
  /** `execution.futureAdapter`, or undefined. */
  futureAdapter: string | undefined
}

/**
 * Polls every adapter's `checkAvailability` on a node-cron schedule (and on `checkNow()`), keeps their health
 * with hysteresis, and keeps the active binding right: the future adapter as soon as it is available, the
 * configured one while it is, otherwise routing's cheapest available. Runs in flight are never interrupted: a
 * switch only changes where the next requests go. Every switch is an event and a log line with its reason.
 */
export class ReadinessMonitor extends EventEmitter<ReadinessEvents> {
  private task: ScheduledTask | undefined
  private activeName: string | undefined
  private lastSwitchEvent: SwitchEvent | undefined
  private checking: Promise<void> | undefined

  constructor(
    private readonly registry: AdapterRegistry,
    private readonly board: HealthBoard,
    private readonly breakers: CircuitBreakers | undefined,
    private readonly settings: ReadinessSettings,
    private readonly logger: Logger,
  ) {
    super()
    this.activeName = settings.configuredAdapter
  }

  /** The adapter bound for requests that pin none; undefined for `auto`. */
  active(): string | undefined {
    return this.activeName
  }

  lastSwitch(): SwitchEvent | undefined {
    return this.lastSwitchEvent
  }

  health(name: string): AdapterHealth {
    return this.board.get(name)
  }

  breaker(name: string): BreakerState {
    return this.breakers?.state(name) ?? 'closed'
  }

  start(): void {
    if (this.task) return
    this.task = cron.schedule(this.settings.schedule, () => this.checkNow(), { noOverlap: true, name: 'execgate-readiness' })
  }

  async stop(): Promise<void> {
    const task = this.task
    this.task = undefined
    await task?.destroy()
    await this.checking
  }

  /** Checks every adapter now (one round at a time; a call during a round waits for it). */
  checkNow(): Promise<void> {
    this.checking ??= this.round().finally(() => (this.checking = undefined))
    return this.checking
  }

  private async round(): Promise<void> {
    await Promise.all(this.registry.list().map((adapter) => this.check(adapter)))
    this.rebind()
  }

  private async check(adapter: CodeExecutionAdapter): Promise<void> {
    const checked = await this.availabilityOf(adapter)
    let availability = checked.availability
    if (availability.status !== 'unavailable' && this.settings.canaries) {
      const failures = await runCanaries(adapter).catch((error) => [{ canary: 'canaries', detail: describeError(error) }])
      if (failures.length > 0) {
        const reason = failures.map((failure) => `canary "${failure.canary}" did not hold: ${failure.detail}`).join('; ')
        availability = { ...availability, status: 'degraded', reason }
      }
    }
    const before = this.board.get(adapter.name).state
    const after = this.board.record(adapter.name, availability, { answered: checked.answered })
    // A good check is the probe an open breaker waits for.
    if (after.state === 'available' || after.state === 'degraded') this.breakers?.success(adapter.name)
    if (after.state !== before) {
      const event: HealthEvent = {
        adapter: adapter.name,
        from: before,
        to: after.state,
        reason: after.reason,
        at: new Date().toISOString(),
      }
      this.logger.info({ adapter: adapter.name, from: before, to: after.state, reason: after.reason }, 'adapter health changed')
      this.emit('health', event)
    }
  }

  /** The adapter's answer, or a failure of our own making when it gave none in time (`answered: false`). */
  private async availabilityOf(adapter: CodeExecutionAdapter): Promise<{ availability: Availability; answered: boolean }> {
    const checkedAt = () => new Date().toISOString()
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<{ availability: Availability; answered: boolean }>((resolve) => {
      // It took at least this long: routing under a latency budget should know, once the adapter recovers.
      const tooLong = {
        status: 'unavailable' as const,
        reason: `the availability check took longer than ${this.settings.timeoutMs} ms`,
        latencyMs: this.settings.timeoutMs,
      }
      timer = setTimeout(() => resolve({ availability: { ...tooLong, checkedAt: checkedAt() }, answered: false }), this.settings.timeoutMs)
    })
    const answer = adapter
      .checkAvailability()
      .catch((error): Availability => ({
        status: 'unavailable',
        reason: `the availability check failed: ${describeError(error)}`,
        checkedAt: checkedAt(),
      }))
      .then((availability) => ({ availability, answered: true }))
    try {
      return await Promise.race([answer, timeout])
    } finally {
      clearTimeout(timer)
    }
  }

  /** Future adapter if available, else the configured one if available, else auto. */
  private rebind(): void {
    const { futureAdapter, configuredAdapter } = this.settings
    const usable = (name: string | undefined) =>
      !!name && !!this.registry.get(name) && this.board.usable(name) && this.board.get(name).state !== 'unknown'
    let next: string | undefined
    let reason: string
    if (futureAdapter && usable(futureAdapter)) {
      next = futureAdapter
      reason = `the future adapter ${futureAdapter} is available`
    } else if (configuredAdapter && (usable(configuredAdapter) || this.board.get(configuredAdapter).state === 'unknown')) {
      next = configuredAdapter
      reason = futureAdapter
        ? `the future adapter ${futureAdapter} is ${this.describe(futureAdapter)}; back to execution.adapter`
        : `execution.adapter ${configuredAdapter} is available again`
    } else {
      next = undefined
      const down = this.activeName ?? configuredAdapter
      reason = `${down ?? 'the active adapter'} is ${down ? this.describe(down) : 'unavailable'}; routing to the cheapest available adapter`
    }
    if (next === this.activeName) return
    const event: SwitchEvent = { from: this.activeName, to: next, reason, at: new Date().toISOString() }
    this.activeName = next
    this.lastSwitchEvent = event
    this.logger.warn({ from: event.from ?? 'auto', to: event.to ?? 'auto', reason }, 'active adapter switched')
    this.emit('switch', event)
  }

  private describe(name: string): string {
    const health = this.board.get(name)
    return `${health.state}${health.reason ? ` (${health.reason})` : ''}`
  }
}
