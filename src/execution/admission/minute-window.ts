const MINUTE_MS = 60_000

/**
 * A sum over the last minute (egress requests, egress bytes of a tenant's runs), and when enough of it leaves the
 * window to get back under a limit. Amounts are added as they happen; checking costs O(1) but for what expires.
 */
export class MinuteWindow {
  private readonly items: { at: number; amount: number }[] = []
  private first = 0
  private total = 0

  constructor(private readonly now: () => number = Date.now) {}

  add(amount: number): void {
    if (amount <= 0) return
    const at = this.now()
    const last = this.items.length > this.first ? this.items[this.items.length - 1] : undefined
    // Amounts counted live (a download's chunks) in the same millisecond share one item: the window stays small.
    if (last && last.at === at) last.amount += amount
    else this.items.push({ at, amount })
    this.total += amount
  }

  /** The sum in the window, and in how many ms it drops under `limit` (0 when it is under already). */
  inWindow(limit: number): { used: number; freeInMs: number } {
    const now = this.now()
    while (this.first < this.items.length && this.items[this.first]!.at <= now - MINUTE_MS) this.total -= this.items[this.first++]!.amount
    if (this.first > 1024 && this.first * 2 > this.items.length) {
      this.items.splice(0, this.first)
      this.first = 0
    }
    if (this.first === this.items.length) this.total = 0
    if (this.total < limit) return { used: this.total, freeInMs: 0 }
    let left = this.total
    let freeInMs = 0
    for (let index = this.first; index < this.items.length && left >= limit; index++) {
      left -= this.items[index]!.amount
      freeInMs = this.items[index]!.at + MINUTE_MS - now
    }
    return { used: this.total, freeInMs }
  }
}
