import type { ExecutionErrorInfo, ExecutionStatus } from '../../src/core'

/** Why the interrupt handler stopped the VM, when it did. */
export type StopReason = 'deadline' | 'output' | 'cancelled' | undefined

export const SCRIPT_NAME = 'main.js'

/** A QuickJS exception, as `context.dump` gives it, mapped onto the status vocabulary. */
export function mapQuickJsError(
  dumped: unknown,
  stopReason: StopReason,
  timeoutMs: number,
): { status: ExecutionStatus; error: ExecutionErrorInfo } {
  const error = normalise(dumped)
  if (stopReason === 'output')
    return { status: 'output_limit', error: { type: 'OutputLimit', message: 'output passed the limit; the run was stopped' } }
  if (stopReason === 'cancelled') return { status: 'cancelled', error: { type: 'Cancelled', message: 'the run was cancelled' } }
  if (stopReason === 'deadline' || (error.type === 'InternalError' && error.message === 'interrupted')) {
    return { status: 'timeout', error: { type: 'TimeoutError', message: `execution passed the ${timeoutMs} ms time limit` } }
  }
  if (
    /out of memory/i.test(error.message) ||
    (error.type === 'RangeError' && /allocation|invalid array buffer length/i.test(error.message))
  ) {
    return { status: 'memory_limit', error: { ...error, type: 'MemoryError', message: `memory limit reached: ${error.message}` } }
  }
  if (error.type === 'InternalError' && /stack overflow/i.test(error.message)) {
    return { status: 'error', error: { ...error, type: 'RangeError', message: 'Maximum call stack size exceeded (stack overflow)' } }
  }
  return { status: 'error', error }
}

function normalise(dumped: unknown): ExecutionErrorInfo {
  if (dumped && typeof dumped === 'object') {
    const raw = dumped as { name?: unknown; message?: unknown; stack?: unknown }
    const type = typeof raw.name === 'string' && raw.name ? raw.name : 'Error'
    const message = typeof raw.message === 'string' ? raw.message : safeString(dumped)
    const stack = typeof raw.stack === 'string' ? raw.stack : undefined
    const line = stack?.match(new RegExp(`${SCRIPT_NAME.replace('.', '\\.')}:(\\d+)(?::(\\d+))?`))
    return {
      type,
      message,
      ...(stack ? { stack: stack.slice(0, 4000) } : {}),
      ...(line ? { line: Number(line[1]), ...(line[2] ? { column: Number(line[2]) } : {}) } : {}),
    }
  }
  return { type: 'Error', message: `Uncaught ${safeString(dumped)}` }
}

function safeString(value: unknown): string {
  try {
    return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))
  } catch {
    return String(value)
  }
}
