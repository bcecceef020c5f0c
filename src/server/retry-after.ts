/** `Retry-After` in whole seconds (at least 1) for a wait given in milliseconds; an unknown wait is taken as 1 s. */
export function retryAfterSeconds(retryAfterMs: number | undefined): string {
  return String(Math.max(1, Math.ceil((retryAfterMs ?? 1000) / 1000)))
}
