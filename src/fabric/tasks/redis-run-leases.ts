import type { Redis } from 'ioredis'

/** Who holds a run: the task, the process that claimed it and the attempt its claim counted. */
export interface RunHolder {
  id: string
  owner: string
  attempt: number
}

/** How many lapsed leases one look takes at most (the next tick takes the rest). */
const LAPSED_BATCH = 100

/**
 * Leases of the runs a process started by a write of its own (a dependent started in its dependency's end write)
 * rather than through BullMQ, whose job lock is the lease of every other run. What BullMQ does for a job, done here
 * for such a run: one sorted set, `leases`, of holders (task, owner, attempt) scored by the time the lease lapses; the
 * holding process renews its own every third of `leaseMs`; when it stops (kill -9, a stall past the lease) any
 * process's tick takes the lapsed entry (ZREM: one taker) and the scheduler settles the run as lost, only while the
 * task is still held by that owner at that attempt (a compare-and-set), so the retry policy decides, as for a job
 * handed back. The lease is written before the claim, in the same write to the connection: a claim never lands
 * without its lease (a lease whose claim did not land lapses and is dropped, its task not held by it).
 */
export class RedisRunLeases {
  /** This process's leases: task id → member. */
  private readonly held = new Map<string, string>()
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    readonly leaseMs: number,
  ) {}

  /** Sends the lease now (the caller sends the claim right after it, on the same connection). */
  take(holder: RunHolder): void {
    const member = JSON.stringify([holder.id, holder.owner, holder.attempt])
    this.held.set(holder.id, member)
    this.redis.zadd(this.key, Date.now() + this.leaseMs, member).catch(() => undefined)
    if (this.timer) return
    this.timer = setInterval(() => void this.renew(), Math.max(100, Math.floor(this.leaseMs / 3)))
    this.timer.unref()
  }

  holds(id: string): boolean {
    return this.held.has(id)
  }

  /** The run of `id` here ended, or its claim did not land: its lease goes (one left behind lapses and is dropped). */
  release(id: string): void {
    const member = this.held.get(id)
    if (member === undefined) return
    this.held.delete(id)
    this.redis.zrem(this.key, member).catch(() => undefined)
    if (this.held.size === 0) this.stop()
  }

  private async renew(): Promise<void> {
    if (this.held.size === 0) return
    const until = Date.now() + this.leaseMs
    // XX: a lease another process took as lapsed stays taken (the run is settled as lost there).
    await this.redis.zadd(this.key, 'XX', ...[...this.held.values()].flatMap((member) => [until, member])).catch(() => undefined)
  }

  /** Lapsed leases this call took (each taken by one caller only), oldest first. */
  async lapsed(now: number): Promise<RunHolder[]> {
    const members = await this.redis.zrangebyscore(this.key, '-inf', `(${now}`, 'LIMIT', 0, LAPSED_BATCH)
    if (members.length === 0) return []
    const taken = await Promise.all(members.map((member) => this.redis.zrem(this.key, member)))
    return members
      .filter((_, index) => taken[index] === 1)
      .map((member) => {
        const [id, owner, attempt] = JSON.parse(member) as [string, string, number]
        return { id, owner, attempt }
      })
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
  }
}
