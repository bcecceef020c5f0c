import type { SessionLimits } from '../../src/core'
import type { OptionSchema } from '../shared/option-schema'

/** The `adapters.monty` config section. */
export interface MontyOptions {
  /** Deepest Python call stack; past it monty raises RecursionError. */
  maxRecursionDepth: number
  /** Worker threads for runs longer than the inline budget. */
  workers: number
  /** Time a cancelled or overdue worker run gets before the worker is killed. */
  killGraceMs: number
  /**
   * How long a run may take on the calling thread before it is handed to a worker thread instead (started again
   * there, its first output discarded). Most runs take microseconds; 0 sends every run to a worker.
   */
  inlineBudgetMs: number
}

/** What `new MontyAdapter()` takes: any config option (the rest default) and the session limits. */
export type MontyAdapterOptions = Partial<MontyOptions> & {
  /** Session TTL and cap (config `sessions`), for calls with a `sessionId`, which run in monty's REPL. */
  sessions?: SessionLimits
  /** Start the workers now rather than at the first run or `warmUp()` (the CLI warms on first use). @default true */
  warmOnStart?: boolean
}

export const MONTY_OPTIONS_SCHEMA: OptionSchema<MontyOptions> = {
  maxRecursionDepth: { doc: 'Deepest Python call stack in monty', format: 'positive-int', default: 200, env: 'EXECGATE_ADAPTERS_MONTY_MAX_RECURSION_DEPTH' },
  workers: { doc: 'monty worker threads', format: 'positive-int', default: 2, env: 'EXECGATE_ADAPTERS_MONTY_WORKERS' },
  killGraceMs: { doc: 'Time before an overdue monty worker is killed (ms)', format: 'non-negative-int', default: 50, env: 'EXECGATE_ADAPTERS_MONTY_KILL_GRACE_MS' },
  inlineBudgetMs: {
    doc: 'Longest monty run on the calling thread before a worker takes it (ms)',
    format: 'non-negative-int',
    default: 20,
    env: 'EXECGATE_ADAPTERS_MONTY_INLINE_BUDGET_MS',
  },
}
