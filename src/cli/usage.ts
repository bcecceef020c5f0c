import { InvalidArgumentError } from 'commander'
import { ExecgateError } from '../core'

/** The CLI's exit code for bad usage or an invalid request (0 is `ok`, 1 any other outcome). */
export const EXIT_USAGE = 2

export function positiveInteger(flag: string) {
  return (value: string): number => {
    const parsed = Number(value)
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < 1) {
      throw new InvalidArgumentError(`${flag} must be a positive whole number, got "${value}"`)
    }
    return parsed
  }
}

export function nonNegativePort(value: string): number {
  const parsed = Number(value)
  if (!/^\d+$/.test(value.trim()) || parsed > 65535)
    throw new InvalidArgumentError(`--port must be a whole number from 0 to 65535, got "${value}"`)
  return parsed
}

export function usage(detail: string): ExecgateError {
  return new ExecgateError('EXECGATE_CLI_USAGE', { detail })
}
