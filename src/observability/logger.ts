import pino from 'pino'

/** Structured logger (pino's shape), bound to the `Logger` token. */
export interface Logger {
  trace(obj: object | string, msg?: string): void
  debug(obj: object | string, msg?: string): void
  info(obj: object | string, msg?: string): void
  warn(obj: object | string, msg?: string): void
  error(obj: object | string, msg?: string): void
  child(bindings: Record<string, unknown>): Logger
  isLevelEnabled(level: string): boolean
}

/**
 * Structured logs to stderr, so stdout stays the program's (the CLI's `--json` prints only the result there).
 * Code and output are never logged.
 */
export function createLogger(level: string, destination: NodeJS.WritableStream = process.stderr): Logger {
  return pino(
    { level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime },
    destination as pino.DestinationStream,
  ) as unknown as Logger
}
