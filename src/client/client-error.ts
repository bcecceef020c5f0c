import { ERROR_CODES, type ErrorCode, type Fault } from '../core/errors'

/**
 * What a client call throws: the server's error code (the registry's, src/core/errors.ts), the HTTP status, and
 * whether trying again can help. Check `code`, not `instanceof`: a bundler may load two copies of this class.
 */
export class ExecgateClientError extends Error {
  readonly code: ErrorCode | (string & {})
  readonly fault: Fault
  readonly retryable: boolean
  /** The HTTP status, or 0 when no answer came (unreachable, cancelled). */
  readonly status: number
  /** How long the server asked to wait (`Retry-After`), when it did. */
  readonly retryAfterMs?: number
  /** Requests sent for this call, retries included. */
  readonly attempts: number

  constructor(init: { code: string; message: string; status: number; retryAfterMs?: number; attempts: number; cause?: unknown }) {
    super(
      init.message.startsWith('[execgate]') ? init.message : `[execgate] [client] ${init.message}`,
      init.cause === undefined ? undefined : { cause: init.cause },
    )
    this.name = 'ExecgateClientError'
    this.code = init.code
    const known = (ERROR_CODES as Record<string, { fault: Fault; retryable: boolean } | undefined>)[init.code]
    this.fault = known?.fault ?? (init.status >= 500 ? 'backend' : 'client')
    this.retryable = known?.retryable ?? (init.status === 429 || init.status === 503)
    this.status = init.status
    if (init.retryAfterMs !== undefined) this.retryAfterMs = init.retryAfterMs
    this.attempts = init.attempts
  }
}

/** True for an error a client call threw, optionally with this code. */
export function isExecgateClientError(value: unknown, code?: ErrorCode): value is ExecgateClientError {
  if (typeof value !== 'object' || value === null || (value as { name?: unknown }).name !== 'ExecgateClientError') return false
  return code === undefined || (value as { code?: unknown }).code === code
}
