import type { ExecutionErrorInfo, ExecutionStatus } from '../../src/core'

/** The shape of @pydantic/monty's errors that we read (checked by fields, not by class across the binding). */
interface MontyErrorLike {
  exception?: { typeName?: string; message?: string }
  traceback?: () => { line?: number; column?: number }[]
  display?: (format?: string) => string
  message?: string
}

/** Monty's outcomes onto the status vocabulary; unsupported syntax reads "not supported by monty: …". */
export function mapMontyError(error: unknown): { status: ExecutionStatus; error: ExecutionErrorInfo } {
  const montyError = error as MontyErrorLike
  const type = montyError.exception?.typeName ?? 'Error'
  const message = montyError.exception?.message ?? montyError.message ?? String(error)
  let frame: { line?: number; column?: number } | undefined
  try {
    const frames = montyError.traceback?.() ?? []
    frame = frames[frames.length - 1]
  } catch {
    frame = undefined
  }
  const position = { ...(frame?.line ? { line: frame.line } : {}), ...(frame?.column ? { column: frame.column } : {}) }
  let stack: string | undefined
  try {
    stack = montyError.display?.('traceback')
  } catch {
    stack = undefined
  }
  const info = (status: ExecutionStatus, errorType: string, text: string) => ({
    status,
    error: { type: errorType, message: text, ...position, ...(stack && stack !== text ? { stack: stack.slice(0, 4000) } : {}) },
  })
  if (type === 'TimeoutError' && /time limit exceeded/.test(message))
    return info('timeout', 'TimeoutError', `execution passed the time limit (${message})`)
  if (type === 'MemoryError') return info('memory_limit', 'MemoryError', `memory limit reached: ${message}`)
  if (type === 'NotImplementedError' && /does not yet support|not implemented/.test(message)) {
    return info('error', 'NotSupported', `not supported by monty: ${message.replace(/^The monty syntax parser does not yet support /, '')}`)
  }
  return info('error', type, message)
}
