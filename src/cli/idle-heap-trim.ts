import { performance } from 'node:perf_hooks'
import v8 from 'node:v8'
import vm from 'node:vm'

/** How often `execgate serve` looks at its event loop (ms). */
export const IDLE_CHECK_MS = 1000
/** A check whose event loop was busy less than this share of the time counts as idle. */
const IDLE_UTILIZATION = 0.05
/**
 * Idle checks in a row before the heap is trimmed: a pause between bursts is not the end of the load. After a trim the
 * next burst starts from a small heap and runs more collections: trimming after 2 s idle cost 0.82-0.83x of the
 * throughput of 5 s bursts 5 s apart (docs/benchmarks.md, HTTP); V8's own memory reducer waits 8 s.
 */
const IDLE_CHECKS = 5
/** Growth of the heap's committed memory since the last trim (or start) that is worth a full collection. */
export const TRIM_GROWTH_BYTES = 16 * 1024 * 1024

export interface IdleHeapTrimOptions {
  checkMs?: number
  growthBytes?: number
  /** Called after each trim with the committed heap before and after (tests, logs). */
  onTrim?: (before: number, after: number) => void
}

/**
 * After a load, gives the heap back: once the event loop has been idle for five checks in a row and the heap's committed
 * memory has grown by `growthBytes` since the last trim, a full collection (two, see below). V8's own memory reducer does this too,
 * but only 8 s after the last full collection of the load, and only when its sample of the allocation rate is low
 * then; the server stayed +57 to +78 MB above its pre-load RSS 10 s after the load (docs/benchmarks.md, HTTP). The
 * collection blocks the event loop for as long as it takes (tens of ms for this heap), so only an idle server runs
 * it, at most once per growth. Returns a function that stops watching.
 */
export function trimHeapWhenIdle(options: IdleHeapTrimOptions = {}): () => void {
  const collect = exposedGc()
  if (!collect) return () => undefined
  const growthBytes = options.growthBytes ?? TRIM_GROWTH_BYTES
  let baseline = committedHeapBytes()
  let idleChecks = 0
  let last = performance.eventLoopUtilization()
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const busy = performance.eventLoopUtilization(now, last).utilization
    last = now
    idleChecks = busy < IDLE_UTILIZATION ? idleChecks + 1 : 0
    const before = committedHeapBytes()
    // The lowest level seen is the baseline: a heap that shrank on its own moves it down.
    if (before < baseline) baseline = before
    if (idleChecks < IDLE_CHECKS || before - baseline < growthBytes) return
    // Twice: the first collection's pages are swept after it returns, and only the second gives the empty ones back
    // (a fragmented 120 MB heap: 105 MB after one, 39 MB after two).
    collect()
    collect()
    const after = committedHeapBytes()
    baseline = after
    idleChecks = 0
    // Its own time is not load: the next check measures from here.
    last = performance.eventLoopUtilization()
    options.onTrim?.(before, after)
  }, options.checkMs ?? IDLE_CHECK_MS)
  timer.unref()
  return () => clearInterval(timer)
}

function committedHeapBytes(): number {
  return v8.getHeapStatistics().total_heap_size
}

/**
 * V8's `gc`, without exposing it to anything else: the flag is on only while one new, empty context is made (V8 gives
 * `gc` to contexts made while it is set), then off again. An operator's own `--expose-gc` is used as it is.
 */
function exposedGc(): (() => void) | undefined {
  const own = (globalThis as { gc?: unknown }).gc
  if (typeof own === 'function') return own as () => void
  try {
    v8.setFlagsFromString('--expose-gc')
    const collect: unknown = vm.runInNewContext('gc')
    return typeof collect === 'function' ? (collect as () => void) : undefined
  } catch {
    return undefined
  } finally {
    v8.setFlagsFromString('--no-expose-gc')
  }
}
