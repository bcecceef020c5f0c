/** Per-adapter circuit breaker settings (config `routing.breaker`). */
export interface BreakerSettings {
  /** Backend failures within `windowMs` that open the breaker. */
  failures: number
  windowMs: number
  /** How long an open breaker skips its adapter before letting one request through as a probe. */
  cooldownMs: number
}

export type BreakerState = 'closed' | 'open' | 'half-open'

interface Circuit {
  state: BreakerState
  failures: number[]
  openedAt: number
  probing: boolean
}

/**
 * Skips an adapter whose backend keeps failing (`unavailable`, a backend crash), so requests stop paying for a
 * dead backend's timeouts. After the cooldown one request probes it; a success (or a good readiness check)
 * closes the breaker, a failure opens it again. Only backend failures count: a user's own error never does.
 */
export class CircuitBreakers {
  private readonly circuits = new Map<string, Circuit>()

  constructor(
    private readonly settings: BreakerSettings,
    private readonly now: () => number = Date.now,
  ) {}

  private circuit(name: string): Circuit {
    let circuit = this.circuits.get(name)
    if (!circuit) this.circuits.set(name, (circuit = { state: 'closed', failures: [], openedAt: 0, probing: false }))
    return circuit
  }

  state(name: string): BreakerState {
    return this.circuits.get(name)?.state ?? 'closed'
  }

  /** Whether a request may go to the adapter now; in half-open, only the one probe may. */
  allows(name: string): boolean {
    const circuit = this.circuits.get(name)
    if (!circuit || circuit.state === 'closed') return true
    if (circuit.state === 'open' && this.now() - circuit.openedAt >= this.settings.cooldownMs) {
      circuit.state = 'half-open'
      circuit.probing = false
    }
    if (circuit.state === 'half-open' && !circuit.probing) return true
    return false
  }

  /** Called when a request is actually sent, so a half-open breaker lets exactly one through. */
  dispatched(name: string): void {
    const circuit = this.circuits.get(name)
    if (circuit?.state === 'half-open') circuit.probing = true
  }

  success(name: string): void {
    const circuit = this.circuits.get(name)
    if (!circuit) return
    circuit.state = 'closed'
    circuit.failures = []
    circuit.probing = false
  }

  /** Returns true when this failure opened the breaker. */
  failure(name: string): boolean {
    const circuit = this.circuit(name)
    const now = this.now()
    if (circuit.state === 'half-open') {
      circuit.state = 'open'
      circuit.openedAt = now
      circuit.probing = false
      return true
    }
    circuit.failures = circuit.failures.filter((time) => now - time < this.settings.windowMs)
    circuit.failures.push(now)
    if (circuit.state === 'closed' && circuit.failures.length >= this.settings.failures) {
      circuit.state = 'open'
      circuit.openedAt = now
      return true
    }
    return false
  }
}
