import type { ExecutionResult, ExecutionStatus } from '../core'
import type { ExecgateClientError } from './client-error'

/**
 * A call that got no result from the server, as an ExecutionResult: `execute` and `exec` never throw, remote or
 * in-process, so an agent's code handles one shape. The status says what kind of failure it was, `error.code` which.
 */
export function resultFromError(error: ExecgateClientError, traceId: string | undefined, adapter = 'remote'): ExecutionResult {
  return {
    status: statusOf(error),
    adapter,
    traceId: traceId ?? '',
    durationMs: 0,
    stdout: '',
    stderr: '',
    truncated: false,
    stdoutBytes: 0,
    stderrBytes: 0,
    usage: {},
    message: error.message,
    error: { type: 'ExecgateClientError', code: error.code, message: error.message },
    ...(error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {}),
  }
}

function statusOf(error: ExecgateClientError): ExecutionStatus {
  if (error.code === 'EXECGATE_REQUEST_CANCELLED') return 'cancelled'
  if (error.status === 429 || error.status === 503 || error.code === 'EXECGATE_SERVER_UNREACHABLE') return 'unavailable'
  if (error.status === 403 && error.code !== 'EXECGATE_FORBIDDEN') return 'policy_violation'
  if (error.status >= 400 && error.status < 500) return 'invalid_request'
  return 'internal_error'
}
