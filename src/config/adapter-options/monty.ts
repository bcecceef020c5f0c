import { formats } from '../formats'

export interface MontyOptionsConfig {
  /** Deepest Python call stack; past it monty raises RecursionError. @default 200 @env EXECGATE_ADAPTERS_MONTY_MAX_RECURSION_DEPTH */
  maxRecursionDepth: number
  /** Worker threads for runs longer than the inline budget. @default 2 @env EXECGATE_ADAPTERS_MONTY_WORKERS */
  workers: number
  /** Time a cancelled or overdue worker run gets before the worker is killed. @default 50 @env EXECGATE_ADAPTERS_MONTY_KILL_GRACE_MS */
  killGraceMs: number
  /**
   * How long a run may take on the calling thread before it is started again on a worker; 0 sends every run to a
   * worker. @default 20 @env EXECGATE_ADAPTERS_MONTY_INLINE_BUDGET_MS
   */
  inlineBudgetMs: number
}

export const montySchema = {
  maxRecursionDepth: { doc: 'Deepest Python call stack in monty', format: formats.positiveInt, default: 200 },
  workers: { doc: 'monty worker threads', format: formats.positiveInt, default: 2 },
  killGraceMs: { doc: 'Time before an overdue monty worker is killed (ms)', format: formats.nonNegativeInt, default: 50 },
  inlineBudgetMs: { doc: 'Longest monty run on the calling thread before a worker takes it (ms)', format: formats.nonNegativeInt, default: 20 },
}
