import { isExecgateError, type ExecutionStatus } from '../../src/core'

interface Mapped {
  status: ExecutionStatus
  type: string
  message: string
}

/**
 * A `FunctionError` (the function itself failed): its own timeout is `timeout` (AWS says "Task timed out after
 * N seconds"; serverless-offline "[504] - Lambda timeout."), anything else `internal_error` with the payload's message.
 */
export function mapFunctionError(payload: string, wallTimeMs: number): Mapped {
  let detail: { errorMessage?: string; errorType?: string } = {}
  try {
    detail = JSON.parse(payload)
  } catch {
    detail = { errorMessage: payload }
  }
  const message = detail.errorMessage ?? 'the function failed without a message'
  if (/Task timed out|Lambda timeout/i.test(message)) {
    return {
      status: 'timeout',
      type: 'FunctionTimeout',
      message: `the Lambda function hit its own timeout before the ${wallTimeMs} ms limit: ${message}`,
    }
  }
  return { status: 'internal_error', type: detail.errorType ?? 'FunctionError', message: `the Lambda function failed: ${message}` }
}

/** A failed Invoke call: throttling and service trouble are `unavailable` (routing falls back). */
export function mapLambdaError(error: unknown, functionName: string): Mapped {
  if (isExecgateError(error, 'EXECGATE_DEPENDENCY_MISSING'))
    return { status: 'unavailable', type: error.code, message: withoutPrefix(error.message) }
  const name = (error as { name?: string })?.name ?? 'Error'
  const message = (error as { message?: string })?.message ?? String(error)
  const code = (error as { code?: string })?.code
  if (name === 'TooManyRequestsException' || name === 'ThrottlingException')
    return { status: 'unavailable', type: name, message: `Lambda is throttling invocations of ${functionName}: ${message}` }
  if (name === 'ResourceNotFoundException')
    return {
      status: 'unavailable',
      type: name,
      message: `the function ${functionName} was not found (deploy it: docs/adapters/lambda.md): ${message}`,
    }
  if (name === 'RequestTooLargeException')
    return { status: 'invalid_request', type: name, message: `the request is over Lambda's payload limit: ${message}` }
  if (name === 'AccessDeniedException' || name === 'UnrecognizedClientException' || name === 'CredentialsProviderError') {
    return {
      status: 'unavailable',
      type: name,
      message: `access denied by AWS (${name}): ${message}; the caller needs lambda:InvokeFunction on ${functionName}`,
    }
  }
  if (code === 'ECONNREFUSED' || /ECONNREFUSED|ECONNRESET|socket hang up/.test(message))
    return { status: 'unavailable', type: 'EndpointUnreachable', message: `the Lambda endpoint is unreachable: ${message}` }
  if (code === 'ENOTFOUND' || /ENOTFOUND/.test(message))
    return {
      status: 'unavailable',
      type: 'UnknownEndpoint',
      message: `the Lambda endpoint does not resolve (is the region right?): ${message}`,
    }
  return { status: 'unavailable', type: name, message: `Lambda invoke failed (${name}): ${message}` }
}

/** The adapter prefixes its own `[execgate] [lambda]`; an ExecgateError's message already starts with `[execgate] `. */
function withoutPrefix(message: string): string {
  return message.replace(/^\[execgate\] /, '')
}
