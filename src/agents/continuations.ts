import { randomUUID } from 'node:crypto'

/**
 * Voice answers that went over their budget and kept running, by id, until the caller takes them. Bounded twice:
 * a finished answer is dropped `ttlMs` after it is ready, and past `max` entries the oldest work is cancelled.
 * Generic over the answer, so it needs nothing of the handler that uses it (no import cycle).
 */
export class Continuations<Answer> {
  private readonly entries = new Map<string, { work: Promise<Answer>; cancel: AbortController }>()

  constructor(
    readonly ttlMs: number,
    private readonly max: number,
  ) {}

  keep(work: Promise<Answer>, cancel: AbortController): string {
    const id = randomUUID()
    this.entries.set(id, { work, cancel })
    if (this.entries.size > this.max) this.cancel(this.entries.keys().next().value!)
    const expire = () => setTimeout(() => this.entries.get(id)?.work === work && this.entries.delete(id), this.ttlMs).unref()
    work.then(expire, expire)
    return id
  }

  take(id: string): Promise<Answer> | undefined {
    const entry = this.entries.get(id)
    this.entries.delete(id)
    return entry?.work
  }

  cancel(id: string): boolean {
    const entry = this.entries.get(id)
    if (!entry) return false
    this.entries.delete(id)
    entry.cancel.abort()
    return true
  }
}
