import type { ExecgateError } from './errors'
import type { ExecutionErrorInfo, ExecutionResult, ExecutionStatus } from './types'

/** Plain-language summaries used when an adapter gives no message of its own. */
const STATUS_SENTENCES: Record<ExecutionStatus, string> = {
  ok: 'The code ran to completion.',
  error: 'The code raised an error.',
  timeout: 'The code ran past its time limit and was stopped.',
  memory_limit: 'The code used more memory than its limit and was stopped.',
  output_limit: 'The code printed more than the output limit; the head and the tail are kept.',
  policy_violation: 'The security policy refused this code.',
  invalid_request: 'The request is malformed.',
  unavailable: 'The execution backend is unavailable right now.',
  not_implemented: 'Code execution is not available here; describe the computation instead.',
  cancelled: 'The run was cancelled.',
  internal_error: 'execgate failed while running the code; this is not an error in the code.',
}

export function statusSentence(status: ExecutionStatus): string {
  return STATUS_SENTENCES[status]
}

export interface ResultFields extends Partial<Omit<ExecutionResult, 'status' | 'adapter'>> {
  error?: ExecutionErrorInfo
}

/** A complete result with every required field present; adapters fill what they know. */
export function createResult(status: ExecutionStatus, adapter: string, fields: ResultFields = {}): ExecutionResult {
  const result: ExecutionResult = {
    status,
    adapter,
    traceId: fields.traceId ?? '',
    durationMs: fields.durationMs ?? 0,
    stdout: fields.stdout ?? '',
    stderr: fields.stderr ?? '',
    truncated: fields.truncated ?? false,
    stdoutBytes: fields.stdoutBytes ?? Buffer.byteLength(fields.stdout ?? ''),
    stderrBytes: fields.stderrBytes ?? Buffer.byteLength(fields.stderr ?? ''),
    usage: fields.usage ?? {},
  }
  // for…in, not Object.entries: no array of pairs per result (this runs for every run, on every adapter).
  for (const key in fields) {
    const value = (fields as Record<string, unknown>)[key]
    if (value !== undefined && !(key in result)) (result as unknown as Record<string, unknown>)[key] = value
  }
  if (status !== 'ok' && !result.message) result.message = fields.error?.message ?? statusSentence(status)
  return result
}

/** A result for a run that never started: refused, invalid, or the backend down. */
export function refusal(
  status: ExecutionStatus,
  adapter: string,
  message: string,
  errorType: string = status,
  extra: ResultFields = {},
): ExecutionResult {
  return createResult(status, adapter, { ...extra, message, error: { type: errorType, message } })
}

/** A result for a run execgate refused or failed, carrying the registry code so callers decide from fields. */
export function errorResult(status: ExecutionStatus, adapter: string, error: ExecgateError, extra: ResultFields = {}): ExecutionResult {
  return createResult(status, adapter, {
    ...extra,
    message: error.message,
    error: { type: error.name, code: error.code, message: error.message, ...extra.error },
  })
}
