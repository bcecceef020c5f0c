import type { OutputCapture } from '../../src/core'

/** Why the host stopped a run itself; absent when the run ended on its own. */
export type StopReason = 'timeout' | 'output_limit' | 'cancelled'

/**
 * The reason a stop is reported under: output already past its cap broke that limit first, and a deadline reached
 * while the overflow was still draining only caught it late.
 */
export function stopReasonFor(reason: StopReason, output: Pick<OutputCapture, 'exceeded'>): StopReason {
  return reason === 'timeout' && output.exceeded ? 'output_limit' : reason
}
