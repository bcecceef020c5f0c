import type { Availability, HealthState } from '../core'

/** What the readiness monitor knows of one adapter. `unknown` until its first check. */
export interface AdapterHealth {
  state: HealthState | 'unknown'
  reason?: string
  latencyMs?: number
  /** ISO-8601 time of the last check. */
  checkedAt?: string
  /** Failed checks in a row, and good ones in a row: the hysteresis counters. */
  failuresInARow: number
  successesInARow: number
}

export interface HysteresisSettings {
  /** Consecutive failed checks before an adapter is marked unavailable. */
  unhealthyAfter: number
  /** Consecutive good checks before an unavailable adapter is available again. */
  healthyAfter: number
}

/**
 * Health by adapter, with hysteresis so one slow check does not flap routing: a state flips only after the
 * configured number of checks in a row agree. `degraded` (the adapter's own word, or a failed canary) applies
 * at once: the adapter still runs code, but a limit or a dependency is not what it should be.
 */
export class HealthBoard {
  private readonly health = new Map<string, AdapterHealth>()

  constructor(private readonly settings: HysteresisSettings) {}

  get(name: string): AdapterHealth {
    return this.health.get(name) ?? { state: 'unknown', failuresInARow: 0, successesInARow: 0 }
  }

  /** Usable for routing: anything not known to be unavailable. */
  usable(name: string): boolean {
    return this.get(name).state !== 'unavailable'
  }

  /**
   * Records a check; returns the health after it. A first check the adapter answers "unavailable" flips it at once
   * (nothing known is good, so a missing backend gets no traffic), but a first check that only ran out of time
   * (`answered: false`) waits for the hysteresis like any other failure: an adapter still starting up, or busy with
   * a cold load on a loaded machine, is not known to be down.
   */
  record(name: string, availability: Availability, { answered = true }: { answered?: boolean } = {}): AdapterHealth {
    const before = this.get(name)
    const next: AdapterHealth = { ...before, latencyMs: availability.latencyMs, checkedAt: availability.checkedAt }
    if (availability.status === 'unavailable') {
      next.failuresInARow = before.failuresInARow + 1
      next.successesInARow = 0
      const flips = (before.state === 'unknown' && answered) || next.failuresInARow >= this.settings.unhealthyAfter
      if (flips) next.state = 'unavailable'
      next.reason = availability.reason
    } else {
      next.successesInARow = before.successesInARow + 1
      next.failuresInARow = 0
      const recovers = before.state !== 'unavailable' || next.successesInARow >= this.settings.healthyAfter
      if (recovers) {
        next.state = availability.status
        next.reason = availability.reason
      }
    }
    this.health.set(name, next)
    return next
  }
}
