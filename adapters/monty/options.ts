import type { SessionLimits } from '../../src/runtime'
import type { OptionSchema } from '../shared/option-schema'

/** The `adapters.monty` config section. */
export interface MontyOptions {
  /** Deepest Python call stack; past it monty raises RecursionError. */
  maxRecursionDepth: number
  /** Worker processes for runs longer than the inline budget (or than its memory). */
  workers: number
  /** Time a cancelled or overdue worker run gets before the worker is killed. */
  killGraceMs: number
  /**
   * How long a run may take on the calling thread before it is handed to a worker process instead (started again
   * there, its first output discarded). Most runs take microseconds; 0 sends every run to a worker.
   */
  inlineBudgetMs: number
  /**
   * Memory a run on the calling thread may take (MiB). monty's own count misses part of what its Rust allocator
   * holds (a dict bomb under a 128 MiB limit left the host ~250 MB larger), so inline runs get a small budget and a
   * run that needs more is started again in a worker process, whose memory leaves with it.
   */
  inlineMemoryMiB: number
  /** A worker process resident above this (MiB) is killed mid-run (memory_limit): the hard bound of a run. */
  maxWorkerMiB: number
  /** A worker process resident above this (MiB) after a run is replaced, so no process keeps what a bomb grew. */
  recycleAboveMiB: number
}

/** What `new MontyAdapter()` takes: any config option (the rest default) and the session limits. */
export type MontyAdapterOptions = Partial<MontyOptions> & {
  /** Session TTL and cap (config `sessions`), for calls with a `sessionId`, which run in monty's REPL. */
  sessions?: SessionLimits
  /** Start the workers now rather than at the first run or `warmUp()` (the CLI warms on first use). @default true */
  warmOnStart?: boolean
}

export const MONTY_OPTIONS_SCHEMA: OptionSchema<MontyOptions> = {
  maxRecursionDepth: {
    doc: 'Deepest Python call stack in monty',
    format: 'positive-int',
    default: 200,
    env: 'EXECGATE_ADAPTERS_MONTY_MAX_RECURSION_DEPTH',
  },
  workers: { doc: 'monty worker processes', format: 'positive-int', default: 2, env: 'EXECGATE_ADAPTERS_MONTY_WORKERS' },
  killGraceMs: {
    doc: 'Time before an overdue monty worker is killed (ms)',
    format: 'non-negative-int',
    default: 50,
    env: 'EXECGATE_ADAPTERS_MONTY_KILL_GRACE_MS',
  },
  inlineBudgetMs: {
    doc: 'Longest monty run on the calling thread before a worker takes it (ms)',
    format: 'non-negative-int',
    default: 20,
    env: 'EXECGATE_ADAPTERS_MONTY_INLINE_BUDGET_MS',
  },
  inlineMemoryMiB: {
    doc: 'Memory a monty run on the calling thread may take before a worker process takes it (MiB)',
    format: 'positive-int',
    default: 8,
    env: 'EXECGATE_ADAPTERS_MONTY_INLINE_MEMORY_MI_B',
  },
  maxWorkerMiB: {
    doc: 'Resident memory of a monty worker process past which its run is stopped (MiB)',
    format: 'positive-int',
    default: 512,
    env: 'EXECGATE_ADAPTERS_MONTY_MAX_WORKER_MI_B',
  },
  recycleAboveMiB: {
    doc: 'Resident memory of a monty worker process past which it is replaced after a run (MiB)',
    format: 'positive-int',
    default: 160,
    env: 'EXECGATE_ADAPTERS_MONTY_RECYCLE_ABOVE_MI_B',
  },
}
