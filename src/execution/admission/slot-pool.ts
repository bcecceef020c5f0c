import type { Lane } from '../../core'

/**
 * One adapter's capacity in slots, counted per lane. Interactive runs may take any free slot; batch runs only
 * those outside the reserved share, so a slot for a person waiting is always there when batch work fills the rest.
 * An adapter that declares no `concurrency` has an unbounded pool (its capacity is `Infinity`).
 */
export class SlotPool {
  private readonly used: Record<Lane, number> = { interactive: 0, batch: 0 }

  constructor(
    readonly capacity: number,
    readonly reserved: number,
  ) {}

  canTake(lane: Lane): boolean {
    const total = this.used.interactive + this.used.batch
    if (total >= this.capacity) return false
    return lane === 'interactive' || this.used.batch < this.capacity - this.reserved
  }

  take(lane: Lane): void {
    this.used[lane] += 1
  }

  release(lane: Lane): void {
    this.used[lane] = Math.max(0, this.used[lane] - 1)
  }

  inUse(lane: Lane): number {
    return this.used[lane]
  }
}
