/** How the wait between attempts grows. */
export type Backoff = 'exponential' | 'linear'

export interface RetryOptions {
  /** Attempts in all, the first included. @default 3 */
  maxAttempts?: number
  /** Wait before the second attempt, in ms. @default 100 */
  baseDelayMs?: number
  /** No wait is longer than this. @default 2000 */
  maxDelayMs?: number
  /** @default 'exponential' */
  backoff?: Backoff
  /** Fraction of each wait that is random (0 none, 1 full jitter). @default 0.2 */
  jitter?: number
  /** Called after each failed attempt with the error and the attempt number (1-based). */
  onFailure?: (error: unknown, attempt: number) => void
  /** Whether an error is worth another attempt. @default every error */
  retryable?: (error: unknown) => boolean
}

/**
 * Retries with exponential or linear backoff and jitter, for async work (`run`) and sync work (`runSync`, which
 * does not wait between attempts: a synchronous caller cannot sleep without blocking the event loop). The attempt
 * number is passed to the work, so a caller can change what it does next time (the code generator puts the last
 * failure into its next prompt).
 */
export class RetryStrategy {
  readonly maxAttempts: number
  private readonly options: Required<Omit<RetryOptions, 'onFailure' | 'retryable'>> & Pick<RetryOptions, 'onFailure' | 'retryable'>

  constructor(options: RetryOptions = {}) {
    this.options = { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 2000, backoff: 'exponential', jitter: 0.2, ...options }
    if (!Number.isInteger(this.options.maxAttempts) || this.options.maxAttempts < 1)
      throw new RangeError(`maxAttempts must be a positive integer, got ${this.options.maxAttempts}`)
    if (this.options.jitter < 0 || this.options.jitter > 1)
      throw new RangeError(`jitter must be between 0 and 1, got ${this.options.jitter}`)
    this.maxAttempts = this.options.maxAttempts
  }

  /** The wait after failed attempt `attempt` (1-based), jitter included. */
  delayAfter(attempt: number, random: () => number = Math.random): number {
    const { baseDelayMs, maxDelayMs, backoff, jitter } = this.options
    const raw = backoff === 'exponential' ? baseDelayMs * 2 ** (attempt - 1) : baseDelayMs * attempt
    const capped = Math.min(maxDelayMs, raw)
    return Math.round(capped * (1 - jitter) + capped * jitter * random())
  }

  async run<T>(work: (attempt: number) => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work(attempt)
      } catch (error) {
        this.options.onFailure?.(error, attempt)
        if (attempt >= this.maxAttempts || signal?.aborted || !(this.options.retryable?.(error) ?? true)) throw error
        await new Promise((resolve) => setTimeout(resolve, this.delayAfter(attempt)))
      }
    }
  }

  runSync<T>(work: (attempt: number) => T): T {
    for (let attempt = 1; ; attempt++) {
      try {
        return work(attempt)
      } catch (error) {
        this.options.onFailure?.(error, attempt)
        if (attempt >= this.maxAttempts || !(this.options.retryable?.(error) ?? true)) throw error
      }
    }
  }
}
