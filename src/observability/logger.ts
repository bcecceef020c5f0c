import pino from 'pino'
import type { Logger } from '../tokens'

/**
 * Structured logs to stderr, so stdout stays the program's (the CLI's `--json` prints only the result there).
 * Code and output are never logged.
 */
export function createLogger(level: string, destination: NodeJS.WritableStream = process.stderr): Logger {
  return pino({ level, base: undefined, timestamp: pino.stdTimeFunctions.isoTime }, destination as pino.DestinationStream) as unknown as Logger
}
