import type { Redis } from 'ioredis'
import { requireOptional } from '../core/optional-dependency'
import type { ActivityEntry } from './activity'

/** How long a finished run waits in this node's batch before it is written to Redis. */
const FLUSH_MS = 250

/**
 * The deployment's activity on the shared store (`fabric.store = redis`): every node adds its finished runs to one
 * sorted set, `<fabric.redisPrefix>:activity`, scored by when each ended, so `GET /v1/activity` on any node charts all
 * nodes' runs. Runs are written in batches (one round trip every 250 ms at most, off the run's path), the set is cut
 * to the last `capacity` runs of the deployment (`server.activityCapacity`) at each write, and a read sends this
 * node's batch first, so a caller sees its own run at once.
 */
export class RedisActivityLog {
  private readonly key: string
  private readonly redis: Redis
  private pending: { at: number; member: string }[] = []
  private timer: NodeJS.Timeout | undefined
  private seq = 0
  private readonly node: string

  constructor(
    options: { redisUrl: string; redisPrefix: string; node: string },
    readonly capacity: number,
    private readonly logger?: { warn(details: object, message: string): void },
  ) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional peer dependency, loaded only on the redis store
    const { Redis } = requireOptional('redis', () => require('ioredis') as typeof import('ioredis'))
    this.redis = new Redis(options.redisUrl, { maxRetriesPerRequest: 3 })
    this.key = `${options.redisPrefix}:activity`
    this.node = options.node
  }

  record(entry: ActivityEntry): void {
    // node and seq keep two equal runs (same time, same figures) two members of the set.
    this.pending.push({ at: entry.at, member: JSON.stringify({ ...entry, node: this.node, seq: (this.seq += 1) }) })
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref()
  }

  private async flush(): Promise<void> {
    clearTimeout(this.timer)
    this.timer = undefined
    const batch = this.pending
    if (batch.length === 0) return
    this.pending = []
    try {
      await this.redis
        .multi()
        .zadd(this.key, ...batch.flatMap(({ at, member }) => [at, member]))
        .zremrangebyrank(this.key, 0, -(this.capacity + 1))
        .exec()
    } catch (error) {
      this.logger?.warn({ err: error, runs: batch.length }, "finished runs were not added to the deployment's activity")
    }
  }

  /**
   * Every node's runs that ended at or after `fromMs`, oldest first (only `tenant`'s when given), and when the set
   * was last cut: the end of its oldest run once it holds `capacity` runs (runs before it are gone).
   */
  async read(fromMs: number, tenant?: string): Promise<{ entries: (ActivityEntry & { node: string })[]; overwrittenBefore?: number }> {
    await this.flush()
    const [[, raws], [, count], [, oldest]] = (await this.redis
      .multi()
      .zrangebyscore(this.key, fromMs, '+inf')
      .zcard(this.key)
      .zrange(this.key, '0', '0', 'WITHSCORES')
      .exec()) as unknown as [[unknown, string[]], [unknown, number], [unknown, string[]]]
    const entries = raws
      .map((raw) => JSON.parse(raw) as ActivityEntry & { node: string; seq?: number })
      .filter((entry) => tenant === undefined || entry.tenant === tenant)
      .map(({ seq: _seq, ...entry }) => entry)
    return { entries, ...(count >= this.capacity && oldest[1] ? { overwrittenBefore: Number(oldest[1]) } : {}) }
  }

  async close(): Promise<void> {
    await this.flush()
    await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
