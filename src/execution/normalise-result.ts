import {
  outputResultFields,
  truncateOutput,
  valueBytes,
  type CodeExecutionAdapter,
  type ExecutionResult,
  type SecurityPolicy,
} from '../core'

/** Step 6: one vocabulary, the output cap applied to whatever the adapter returned, the value counted in it. */
export function normaliseResult(result: ExecutionResult, adapter: CodeExecutionAdapter, policy: SecurityPolicy): ExecutionResult {
  result.adapter ||= adapter.name
  const limit = policy.outputBytes
  let reserved = valueBytes(result.value)
  if (reserved > limit) {
    result.value = undefined
    reserved = 0
    result.status = result.status === 'ok' ? 'output_limit' : result.status
    result.message ??= `[execgate] [${adapter.name}] the value is larger than the ${limit}-byte output limit and was dropped`
  }
  const streamBytes = Buffer.byteLength(result.stdout) + Buffer.byteLength(result.stderr)
  if (streamBytes + reserved > limit) {
    const cut = truncateOutput(result.stdout, result.stderr, limit, reserved)
    result.stdout = cut.stdout
    result.stderr = cut.stderr
    result.truncated = true
    result.stdoutBytes = Math.max(result.stdoutBytes, cut.stdoutBytes)
    result.stderrBytes = Math.max(result.stderrBytes, cut.stderrBytes)
  }
  if (result.truncated && result.status === 'ok') {
    result.status = 'output_limit'
    result.message = `[execgate] [${adapter.name}] the output passed the ${limit}-byte limit; the head and the tail are kept`
  }
  // Rich outputs held to the policy whoever produced them (an adapter's runner reports them from inside its sandbox).
  if (result.outputs !== undefined) {
    const rich = outputResultFields(result.status, result.outputs, 0, policy, adapter.name)
    result.status = rich.status
    if (rich.message) result.message = rich.message
    if (rich.outputs) result.outputs = rich.outputs
    else delete result.outputs
  }
  // The error's text is output too: `raise ValueError('E' * 10**7)` would otherwise flood through it.
  if (result.error) {
    result.error.message = capText(result.error.message, limit)
    if (result.error.stack) result.error.stack = capText(result.error.stack, limit)
  }
  if (result.message) result.message = capText(result.message, limit)
  return result
}

/** `text` whole when it fits in `limitBytes`, else its head and tail around a marker, like the streams. */
function capText(text: string, limitBytes: number): string {
  return Buffer.byteLength(text) > limitBytes ? truncateOutput(text, '', limitBytes).stdout : text
}
