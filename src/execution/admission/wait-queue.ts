/**
 * A bounded queue ordered by priority (higher first), then arrival. Lanes' queues hold a few hundred entries at
 * most, so a sorted array with an insertion scan costs less than a heap and keeps removal from the middle (a
 * deadline, a cancel) simple.
 */
export class WaitQueue<T extends { priority: number }> {
  private readonly entries: T[] = []

  constructor(readonly limit: number) {}

  get size(): number {
    return this.entries.length
  }

  get full(): boolean {
    return this.entries.length >= this.limit
  }

  /** Adds behind every entry of the same or higher priority. */
  push(entry: T): void {
    let at = this.entries.length
    while (at > 0 && this.entries[at - 1]!.priority < entry.priority) at -= 1
    this.entries.splice(at, 0, entry)
  }

  /** The first entry `ready` accepts, removed; entries it skips keep their place. */
  takeFirst(ready: (entry: T) => boolean): T | undefined {
    const index = this.entries.findIndex(ready)
    return index < 0 ? undefined : this.entries.splice(index, 1)[0]
  }

  remove(entry: T): boolean {
    const index = this.entries.indexOf(entry)
    if (index >= 0) this.entries.splice(index, 1)
    return index >= 0
  }

  drain(): T[] {
    return this.entries.splice(0, this.entries.length)
  }
}
