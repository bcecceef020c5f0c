import type { ExecutionListener, ExecutionListenerContext, ExecutionRequest, ExecutionResult, ExecutionStatus } from '../index'

/** One finished run as the activity buffer keeps it: when, whose, where and how it ended. Never its code or output. */
export interface ActivityEntry {
  /** Epoch ms when the result was produced. */
  at: number
  tenant: string | undefined
  adapter: string
  /** The admission lane, or `none` for a run refused before admission (a bad request, a policy violation). */
  lane: string
  status: ExecutionStatus
  durationMs: number
}

/**
 * The last `capacity` finished runs of this execgate, in a ring buffer (`server.activityCapacity`): the data of
 * `GET /v1/activity` and the console's Activity page. An `ExecutionListener` bound in the container like the server's
 * metrics, so runs from MCP, tasks and the library on the same execgate are recorded too. A fixed-size array: memory
 * stays bounded whatever the traffic, and recording is O(1) on the run's path.
 */
export class ActivityRecorder implements ExecutionListener {
  private readonly entries: (ActivityEntry | undefined)[]
  private next = 0
  private held = 0

  constructor(
    readonly capacity: number,
    private readonly now: () => number = Date.now,
    /** Told of each run too: the deployment's log on a shared store (src/server/activity-redis.ts). */
    private readonly also?: (entry: ActivityEntry) => void,
  ) {
    this.entries = new Array<ActivityEntry | undefined>(capacity)
  }

  onResult(result: ExecutionResult, _request: ExecutionRequest, context?: ExecutionListenerContext): void {
    this.record({
      at: this.now(),
      tenant: context?.tenant,
      adapter: result.adapter,
      lane: result.admission?.lane ?? 'none',
      status: result.status,
      durationMs: result.durationMs,
    })
  }

  record(entry: ActivityEntry): void {
    this.also?.(entry)
    this.entries[this.next] = entry
    this.next = (this.next + 1) % this.capacity
    this.held = Math.min(this.held + 1, this.capacity)
  }

  /** Runs held now, oldest first; only `tenant`'s when given. */
  list(tenant?: string): ActivityEntry[] {
    const out: ActivityEntry[] = []
    const first = this.held < this.capacity ? 0 : this.next
    for (let index = 0; index < this.held; index++) {
      const entry = this.entries[(first + index) % this.capacity]!
      if (tenant === undefined || entry.tenant === tenant) out.push(entry)
    }
    return out
  }

  /** Epoch ms of the oldest run held, once the buffer is full (runs before it are gone); undefined until then. */
  overwrittenBefore(): number | undefined {
    return this.held < this.capacity ? undefined : this.entries[this.next]!.at
  }
}

export interface ActivityQuery {
  windowMs: number
  bucketMs: number
}

export interface ActivityPoint {
  /** Epoch ms of the bucket's start. */
  startMs: number
  count: number
  p50Ms: number
  p95Ms: number
}

export interface ActivitySummary {
  /** The buffer's size (`server.activityCapacity`). */
  capacity: number
  /** Epoch ms of the window's start and of now (the last bucket ends in the future: it is still filling). */
  fromMs: number
  nowMs: number
  bucketMs: number
  /** Set once the buffer has wrapped and dropped runs from inside the window: nothing before it is known. */
  knownSinceMs?: number
  /** Runs in the window. */
  total: number
  statuses: Partial<Record<ExecutionStatus, number>>
  /** One per bucket, oldest first, empty ones included. */
  buckets: { startMs: number; count: number; statuses: Partial<Record<ExecutionStatus, number>> }[]
  /** Latency per adapter and lane: over the window, and per bucket that had runs. */
  series: { adapter: string; lane: string; count: number; p50Ms: number; p95Ms: number; points: ActivityPoint[] }[]
}

/** Nearest-rank percentile of ascending `sorted` (non-empty). */
function percentile(sorted: readonly number[], fraction: number): number {
  return sorted[Math.max(0, Math.ceil(fraction * sorted.length) - 1)]!
}

function latency(durations: number[]): { count: number; p50Ms: number; p95Ms: number } {
  const sorted = durations.sort((a, b) => a - b)
  return { count: sorted.length, p50Ms: percentile(sorted, 0.5), p95Ms: percentile(sorted, 0.95) }
}

/**
 * Rates, statuses and p50/p95 latency per adapter and lane over a window, in buckets aligned to multiples of the
 * bucket size (so the buckets of successive polls line up and a chart does not jitter).
 */
export function summarizeActivity(
  entries: readonly ActivityEntry[],
  query: ActivityQuery,
  nowMs: number,
  capacity: number,
  overwrittenBefore?: number,
): ActivitySummary {
  const { bucketMs } = query
  const end = Math.floor(nowMs / bucketMs) * bucketMs + bucketMs
  const bucketCount = Math.ceil(query.windowMs / bucketMs)
  const fromMs = end - bucketCount * bucketMs
  const buckets = Array.from({ length: bucketCount }, (_, index) => ({
    startMs: fromMs + index * bucketMs,
    count: 0,
    statuses: {} as Partial<Record<ExecutionStatus, number>>,
  }))
  const statuses: Partial<Record<ExecutionStatus, number>> = {}
  const bySeries = new Map<string, { adapter: string; lane: string; all: number[]; perBucket: Map<number, number[]> }>()
  let total = 0
  for (const entry of entries) {
    if (entry.at < fromMs || entry.at >= end) continue
    const index = Math.floor((entry.at - fromMs) / bucketMs)
    const bucket = buckets[index]!
    bucket.count++
    bucket.statuses[entry.status] = (bucket.statuses[entry.status] ?? 0) + 1
    statuses[entry.status] = (statuses[entry.status] ?? 0) + 1
    total++
    const key = `${entry.adapter}\u0000${entry.lane}`
    let series = bySeries.get(key)
    if (!series) bySeries.set(key, (series = { adapter: entry.adapter, lane: entry.lane, all: [], perBucket: new Map() }))
    series.all.push(entry.durationMs)
    const durations = series.perBucket.get(index) ?? []
    durations.push(entry.durationMs)
    series.perBucket.set(index, durations)
  }
  const series = [...bySeries.values()]
    .map((item) => ({
      adapter: item.adapter,
      lane: item.lane,
      ...latency(item.all),
      points: [...item.perBucket.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, durations]) => ({ startMs: buckets[index]!.startMs, ...latency(durations) })),
    }))
    .sort((a, b) => b.count - a.count || a.adapter.localeCompare(b.adapter) || a.lane.localeCompare(b.lane))
  const knownSinceMs = overwrittenBefore !== undefined && overwrittenBefore > fromMs ? overwrittenBefore : undefined
  return { capacity, fromMs, nowMs, bucketMs, ...(knownSinceMs !== undefined ? { knownSinceMs } : {}), total, statuses, buckets, series }
}
