/**
 * A small least-recently-used map for pure, repeatable work keyed by its input: static checks and TypeScript
 * transpiles of code an agent sends again (a retry, the same formula with other numbers). Entries past `max` drop
 * the least recently used; keys past `maxKeyLength` are never cached, so one huge input cannot pin memory.
 */
export class LruCache<Value> {
  private readonly entries = new Map<string, Value>()
  /** The most recently used key: asked again (code sent again and again), it needs no reordering. */
  private newest: string | undefined

  constructor(
    private readonly max: number,
    private readonly maxKeyLength = 64 * 1024,
  ) {}

  /** The cached value for `key`, or `compute(key)` stored for next time. */
  get(key: string, compute: () => Value): Value {
    const hit = this.entries.get(key)
    if (hit !== undefined) {
      if (key === this.newest) return hit
      // Re-inserted: a Map iterates in insertion order, so the first key is always the least recently used.
      this.entries.delete(key)
      this.entries.set(key, hit)
      this.newest = key
      return hit
    }
    const value = compute()
    if (key.length <= this.maxKeyLength) {
      this.entries.set(key, value)
      this.newest = key
      if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!)
    }
    return value
  }

  get size(): number {
    return this.entries.size
  }
}
