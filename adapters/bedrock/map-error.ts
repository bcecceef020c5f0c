import { isExecgateError, type ExecutionStatus } from '../../src/core'

/**
 * AWS errors as results. Everything that says "not now" or "not here" — throttling, quotas, access, an unknown
 * region, the endpoint unreachable, AWS's own failures — is `unavailable`, so routing falls back to another
 * adapter; a request AWS refuses as malformed is `invalid_request`.
 */
export function mapAwsError(error: unknown): { status: ExecutionStatus; type: string; message: string } {
  // The SDK is an optional peer dependency: without it the adapter is `unavailable`, saying what to install.
  if (isExecgateError(error, 'EXECGATE_DEPENDENCY_MISSING'))
    return { status: 'unavailable', type: error.code, message: error.message.replace(/^\[execgate\] /, '') }
  const name = (error as { name?: string })?.name ?? 'Error'
  const message = (error as { message?: string })?.message ?? String(error)
  const code = (error as { code?: string })?.code
  switch (name) {
    case 'ThrottlingException':
    case 'ServiceQuotaExceededException':
      return { status: 'unavailable', type: name, message: `AgentCore is throttling requests (${name}): ${message}` }
    case 'AccessDeniedException':
    case 'UnrecognizedClientException':
    case 'ExpiredTokenException':
    case 'CredentialsProviderError':
      return {
        status: 'unavailable',
        type: name,
        message:
          `access denied by AWS (${name}): ${message}; check the credentials and the IAM policy for ` +
          `bedrock-agentcore:*CodeInterpreter*`,
      }
    case 'ResourceNotFoundException':
      return { status: 'unavailable', type: name, message: `the code interpreter or session was not found: ${message}` }
    case 'ValidationException':
      return { status: 'invalid_request', type: name, message: `AgentCore refused the request: ${message}` }
    case 'InternalServerException':
    case 'ConflictException':
      return { status: 'unavailable', type: name, message: `AgentCore failed (${name}): ${message}` }
  }
  if (code === 'ENOTFOUND' || /getaddrinfo ENOTFOUND/.test(message))
    return {
      status: 'unavailable',
      type: 'UnknownEndpoint',
      message: `the AgentCore endpoint does not resolve (is the region right?): ${message}`,
    }
  if (code === 'ECONNREFUSED' || /ECONNREFUSED|ECONNRESET|socket hang up/.test(message))
    return { status: 'unavailable', type: 'EndpointUnreachable', message: `the AgentCore endpoint is unreachable: ${message}` }
  return { status: 'unavailable', type: name, message: `AgentCore call failed (${name}): ${message}` }
}
