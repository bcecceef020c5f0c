import type { HealthEvent, ReadinessMonitor, SwitchEvent } from '../index'

/** How many readiness events `GET /v1/readiness/events` keeps: days of changes at the default 30 s schedule. */
export const READINESS_HISTORY_SIZE = 200

/** A health change of one adapter, or a switch of the active adapter (`auto` when routing picks the cheapest). */
export type ReadinessHistoryEvent =
  | { type: 'health'; adapter: string; from: HealthEvent['from']; to: HealthEvent['to']; reason?: string; at: string }
  | { type: 'switch'; from: string; to: string; reason: string; at: string }

/**
 * The readiness monitor's `health` and `switch` events since the server started, the newest `capacity` kept: the
 * timeline of the console's Adapters page. The monitor itself keeps only the last switch.
 */
export class ReadinessHistory {
  private readonly events: ReadinessHistoryEvent[] = []
  private readonly onHealth = (event: HealthEvent) =>
    this.push({
      type: 'health',
      adapter: event.adapter,
      from: event.from,
      to: event.to,
      ...(event.reason ? { reason: event.reason } : {}),
      at: event.at,
    })
  private readonly onSwitch = (event: SwitchEvent) =>
    this.push({ type: 'switch', from: event.from ?? 'auto', to: event.to ?? 'auto', reason: event.reason, at: event.at })

  constructor(
    private readonly readiness: ReadinessMonitor,
    readonly capacity = READINESS_HISTORY_SIZE,
  ) {
    readiness.on('health', this.onHealth)
    readiness.on('switch', this.onSwitch)
  }

  /** Oldest first. */
  list(): readonly ReadinessHistoryEvent[] {
    return this.events
  }

  close(): void {
    this.readiness.off('health', this.onHealth)
    this.readiness.off('switch', this.onSwitch)
  }

  private push(event: ReadinessHistoryEvent): void {
    this.events.push(event)
    if (this.events.length > this.capacity) this.events.splice(0, this.events.length - this.capacity)
  }
}
