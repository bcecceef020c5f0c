/**
 * A run's AbortController, made on first use. Making an AbortSignal costs Node 20 ~8 µs (measured in the service's
 * CPU profile: 4.7% of a trivial monty run's time, more than the service's own steps), and most runs never look at
 * theirs: an inline monty run, any run that ends before its deadline. An abort before the signal exists is kept and
 * the signal, once asked for, is born aborted with that reason, as an ordinary signal aborted earlier would read.
 */
export class LazyAbort {
  private controller: AbortController | undefined
  private abortedEarly = false
  private earlyReason: unknown
  /** Listeners taken before the signal existed (an adapter's run clock): called on abort, never moved to the signal. */
  private listeners: Set<() => void> | undefined

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController()
      if (this.abortedEarly) this.controller.abort(this.earlyReason)
    }
    return this.controller.signal
  }

  /** Whether it was aborted, without making the signal. */
  get aborted(): boolean {
    return this.controller ? this.controller.signal.aborted : this.abortedEarly
  }

  /** `listener` once on abort (at once if already aborted is the caller's to check: `aborted`), without the signal. */
  listen(listener: () => void): () => void {
    ;(this.listeners ??= new Set()).add(listener)
    return () => void this.listeners?.delete(listener)
  }

  abort(reason?: unknown): void {
    if (this.aborted) return
    if (this.controller) this.controller.abort(reason)
    else {
      this.abortedEarly = true
      this.earlyReason = reason
    }
    const listeners = this.listeners
    this.listeners = undefined
    for (const listener of listeners ?? []) listener()
  }
}
