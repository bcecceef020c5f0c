import { describeError, isExecgateError } from '../core'

/**
 * A tool call the service refused, as a tool result an agent can read: the same message and code the HTTP API answers
 * (`{ error: { code, message } }`), the code also in the text, so a refusal through MCP names what HTTP names
 * (e.g. `EXECGATE_SUBMIT_REFUSED` and the loosened limit) instead of the SDK's bare message.
 */
export function toolRefusal(error: unknown) {
  const code = isExecgateError(error) ? error.code : undefined
  const message = describeError(error)
  return {
    content: [{ type: 'text' as const, text: code ? `${message} (${code})` : message }],
    ...(code ? { structuredContent: { error: { code, message } } } : {}),
    isError: true,
  }
}
