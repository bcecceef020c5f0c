import { ActivityRecorder, summarizeActivity, type ActivityEntry } from '../../src/server/activity'
import type { ExecutionRequest, ExecutionResult } from '../../src'

/** The activity ring buffer and its summary (GET /v1/activity), as plain functions of their inputs. */

const entry = (at: number, extra: Partial<ActivityEntry> = {}): ActivityEntry => ({
  at,
  tenant: 'acme',
  adapter: 'quickjs',
  lane: 'batch',
  status: 'ok',
  durationMs: 10,
  ...extra,
})

describe('ActivityRecorder', () => {
  test('keeps the last `capacity` runs in order, and says from when once it has dropped some', () => {
    const recorder = new ActivityRecorder(3)
    recorder.record(entry(1))
    recorder.record(entry(2, { tenant: 'globex' }))
    expect(recorder.overwrittenBefore()).toBeUndefined()
    recorder.record(entry(3))
    recorder.record(entry(4))
    recorder.record(entry(5, { tenant: 'globex' }))
    expect(recorder.list().map((item) => item.at)).toEqual([3, 4, 5])
    expect(recorder.overwrittenBefore()).toBe(3)
    expect(recorder.list('acme').map((item) => item.at)).toEqual([3, 4])
    expect(recorder.list('initech')).toEqual([])
  })

  test('hears a result with its tenant, adapter, lane (none when refused before admission), status and duration', () => {
    let now = 1000
    const recorder = new ActivityRecorder(10, () => now)
    const result = (extra: Partial<ExecutionResult>) =>
      ({
        status: 'ok',
        adapter: 'monty',
        durationMs: 4.5,
        traceId: 't',
        stdout: '',
        stderr: '',
        truncated: false,
        stdoutBytes: 0,
        stderrBytes: 0,
        usage: {},
        ...extra,
      }) as ExecutionResult
    const request = { language: 'python', code: '1' } as ExecutionRequest
    recorder.onResult(result({ admission: { lane: 'interactive', priority: 0, queuedMs: 0 } }), request, { tenant: 'acme' })
    now = 2000
    recorder.onResult(result({ status: 'policy_violation', adapter: 'execgate', durationMs: 0.2 }), request)
    expect(recorder.list()).toEqual([
      { at: 1000, tenant: 'acme', adapter: 'monty', lane: 'interactive', status: 'ok', durationMs: 4.5 },
      { at: 2000, tenant: undefined, adapter: 'execgate', lane: 'none', status: 'policy_violation', durationMs: 0.2 },
    ])
  })
})

describe('summarizeActivity', () => {
  const now = 1_000_000 + 2_500 // half-way through a 5 s bucket

  test('buckets aligned to the bucket size, counts and statuses per bucket, runs outside the window left out', () => {
    const entries = [
      entry(now - 400_000),
      entry(now - 9_000, { status: 'error' }),
      entry(now - 8_000),
      entry(now - 1_000, { status: 'timeout' }),
      entry(now - 500),
    ]
    const summary = summarizeActivity(entries, { windowMs: 30_000, bucketMs: 5_000 }, now, 100)
    expect(summary.buckets.map((bucket) => bucket.startMs)).toEqual([975_000, 980_000, 985_000, 990_000, 995_000, 1_000_000])
    expect(summary.fromMs).toBe(975_000)
    expect(summary.buckets.map((bucket) => bucket.count)).toEqual([0, 0, 0, 2, 0, 2])
    expect(summary.buckets.at(-1)!.statuses).toEqual({ timeout: 1, ok: 1 })
    expect(summary).toMatchObject({ total: 4, statuses: { ok: 2, error: 1, timeout: 1 }, capacity: 100, nowMs: now, bucketMs: 5_000 })
    expect(summary.knownSinceMs).toBeUndefined()
  })

  test('p50 and p95 (nearest rank) per adapter and lane, over the window and per bucket, busiest series first', () => {
    const durations = Array.from({ length: 100 }, (_, index) => index + 1).reverse()
    const entries = [
      ...durations.map((durationMs, index) => entry(now - 20_000 + index * 100, { durationMs })),
      entry(now - 100, { adapter: 'monty', lane: 'interactive', durationMs: 7 }),
    ]
    const { series } = summarizeActivity(entries, { windowMs: 60_000, bucketMs: 10_000 }, now, 1000)
    expect(series.map((item) => [item.adapter, item.lane, item.count, item.p50Ms, item.p95Ms])).toEqual([
      ['quickjs', 'batch', 100, 50, 95],
      ['monty', 'interactive', 1, 7, 7],
    ])
    // 100 runs 100 ms apart from now - 20 s (982 500): 75 fall in the bucket starting at 980 000, the rest in the next.
    expect(series[0]!.points.map((point) => [point.startMs, point.count])).toEqual([
      [980_000, 75],
      [990_000, 25],
    ])
    expect(series[1]!.points).toEqual([{ startMs: 1_000_000, count: 1, p50Ms: 7, p95Ms: 7 }])
  })

  test('says from when the record is complete when the buffer dropped runs inside the window', () => {
    expect(summarizeActivity([entry(now - 1000)], { windowMs: 60_000, bucketMs: 10_000 }, now, 1, now - 1000).knownSinceMs).toBe(now - 1000)
    expect(
      summarizeActivity([entry(now - 1000)], { windowMs: 60_000, bucketMs: 10_000 }, now, 1, now - 120_000).knownSinceMs,
    ).toBeUndefined()
  })
})
