import { performance } from 'node:perf_hooks'
import { describeError, type CodeExecutionAdapter } from '../core'
import type { Logger } from '../observability/logger'

/**
 * Warms every adapter that can (`warmUp()`), together, and resolves when each is warm or has failed. A failure
 * is logged, not thrown: the adapter stays usable (cold), and the readiness monitor reports its health.
 */
export async function warmUpAdapters(adapters: readonly CodeExecutionAdapter[], logger: Logger): Promise<void> {
  const started = performance.now()
  const warmable = adapters.filter((adapter) => adapter.warmUp)
  const outcomes = await Promise.all(
    warmable.map(async (adapter) => {
      const begun = performance.now()
      try {
        await adapter.warmUp!()
        return { adapter: adapter.name, ms: Math.round(performance.now() - begun) }
      } catch (error) {
        logger.warn({ adapter: adapter.name, err: describeError(error) }, 'adapter warm-up failed; its first run pays a cold start')
        return { adapter: adapter.name, ms: Math.round(performance.now() - begun), failed: true }
      }
    }),
  )
  if (warmable.length > 0) logger.debug({ adapters: outcomes, totalMs: Math.round(performance.now() - started) }, 'adapters warm')
}
