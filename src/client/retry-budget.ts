/** How the client retries a 429 or a 503: after the server's `Retry-After`, for as long as the caller allows. */
export interface RetryOptions {
  /** Requests in all, the first included; 1 turns retrying off. @default 4 */
  maxAttempts?: number
  /** No retry starts later than this many ms after the call began (a longer `Retry-After` ends the call at once). @default 30000 */
  budgetMs?: number
  /** The wait when the server gives no `Retry-After`, doubled at each retry. @default 500 */
  fallbackDelayMs?: number
}

export const DEFAULT_RETRY: Required<RetryOptions> = { maxAttempts: 4, budgetMs: 30_000, fallbackDelayMs: 500 }

/** `Retry-After` as ms: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(header: string | null, now = Date.now()): number | undefined {
  if (!header) return undefined
  const trimmed = header.trim()
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000)
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/** The wait before the next attempt, or undefined when the attempts or the budget are spent. */
export function nextDelay(
  retry: Required<RetryOptions>,
  attempt: number,
  startedAt: number,
  retryAfterMs: number | undefined,
  now = Date.now(),
): number | undefined {
  if (attempt >= retry.maxAttempts) return undefined
  const delay = retryAfterMs ?? retry.fallbackDelayMs * 2 ** (attempt - 1)
  return now + delay - startedAt > retry.budgetMs ? undefined : delay
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    // An AbortSignal's reason is the caller's (an Error unless they chose otherwise), passed on unchanged.
    // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the caller's own abort reason
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the caller's own abort reason
      reject(signal!.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
