import { formats } from '../formats'

export interface MontyOptionsConfig {
  /** Deepest Python call stack; past it monty raises RecursionError. @default 200 @env EXECGATE_ADAPTERS_MONTY_MAX_RECURSION_DEPTH */
  maxRecursionDepth: number
}

export const montySchema = {
  maxRecursionDepth: { doc: 'Deepest Python call stack in monty', format: formats.positiveInt, default: 200 },
}
