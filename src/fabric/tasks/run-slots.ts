/**
 * The scheduler's slots: the runs this process has reserved or runs (at most `concurrency` at once), each with the
 * controller that stops it. A slot is taken before a run's claim is written, so a claim made meanwhile (the pump, a
 * submit) sees it taken.
 */
export class RunSlots {
  readonly running = new Map<string, AbortController>()
  /** Ending runs whose slot a dependent started behind their end took over (inherit) before they gave it back. */
  private readonly handedOn = new Set<string>()
  /**
   * Controllers of runs that ended without being aborted, for the next runs: Node 20 makes an AbortSignal in ~4 µs
   * plus its share of the collector's work, and a trivial task's run measured ~17 µs faster on a signal made before
   * (the direct-execute variants in docs/benchmarks.md). A signal is handed on only unaborted, and with no listener
   * left on it: the service takes its listeners off when a run settles, and a run is released only after that.
   */
  private readonly spareControllers: AbortController[] = []
  /** Dispatched runs waiting for a slot (free). */
  private waiters: (() => void)[] = []

  constructor(readonly concurrency: number) {}

  get size(): number {
    return this.running.size
  }

  reserve(id: string): AbortController {
    const controller = this.spareControllers.pop() ?? new AbortController()
    this.running.set(id, controller)
    return controller
  }

  /** Gives back a slot (only its own: the id may have been reserved again meanwhile, a retry's next claim). */
  release(id: string, controller: AbortController): void {
    if (this.running.get(id) !== controller) return
    this.running.delete(id)
    this.handedOn.delete(id)
    if (!controller.signal.aborted && this.spareControllers.length < this.concurrency) this.spareControllers.push(controller)
    // Every waiter looks again: one woken may not take the slot (its announcement stale).
    if (this.running.size < this.concurrency) this.wakeAll()
  }

  /**
   * Whether a run may start now, in a slot of its own or in the slot of `ending`, a run here whose end is being
   * written (free once that end is, and handed on to one run only).
   */
  inherit(ending: string | undefined): boolean {
    const inherits = ending !== undefined && this.running.has(ending) && !this.handedOn.has(ending)
    if (this.running.size - (inherits ? 1 : 0) >= this.concurrency) return false
    if (inherits && this.running.size >= this.concurrency) this.handedOn.add(ending)
    return true
  }

  /** Resolves once fewer than `concurrency` runs hold a slot, or `stopped` says to give up. */
  async free(stopped: () => boolean): Promise<void> {
    while (!stopped() && this.running.size >= this.concurrency) await new Promise<void>((resolve) => this.waiters.push(resolve))
  }

  wakeAll(): void {
    for (const waiter of this.waiters.splice(0)) waiter()
  }
}
