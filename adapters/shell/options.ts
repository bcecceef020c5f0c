import type { OptionSchema } from '../shared/option-schema'

/**
 * The shell adapter's options (`adapters.shell` in config). Each default is written once, in `SHELL_OPTIONS_SCHEMA`; the
 * adapter reads missing options from there.
 */
export interface ShellOptionsConfig {
  /** Warm shell processes per memory cap, each running one script at a time. @default 2 @env EXECGATE_ADAPTERS_SHELL_PROCESSES */
  processes: number
  /**
   * How long past its deadline a script may keep its process (a long regex inside one command never yields) before
   * the process is killed and replaced. @default 50 @env EXECGATE_ADAPTERS_SHELL_KILL_GRACE_MS
   */
  killGraceMs: number
  /**
   * Process pools kept at once, one per distinct memory cap (a process's heap limit is fixed when it starts); the
   * least recently used pool is closed past this. @default 3 @env EXECGATE_ADAPTERS_SHELL_MAX_POOLS
   */
  maxPools: number
  /** Deepest shell function recursion before the script stops with an error. @default 100 @env EXECGATE_ADAPTERS_SHELL_MAX_CALL_DEPTH */
  maxCallDepth: number
  /**
   * Loop iterations (bash, awk, sed, jq) and commands one script may run. High on purpose: the wall-time limit is
   * what stops a runaway loop; this only bounds the interpreter's own bookkeeping. @default 10000000
   * @env EXECGATE_ADAPTERS_SHELL_MAX_ITERATIONS
   */
  maxIterations: number
  /**
   * Cost model for routing (see docs/adapters/shell.md): a script's fixed cost in ms here, through the service. @default 3
   * @env EXECGATE_ADAPTERS_SHELL_STARTUP_MS
   */
  startupMs: number
  /**
   * Cost model for routing: nanoseconds per input byte per pipeline stage (the interpreter is slow per byte).
   * @default 30 @env EXECGATE_ADAPTERS_SHELL_NS_PER_BYTE_STAGE
   */
  nsPerByteStage: number
}

export const SHELL_OPTIONS_SCHEMA: OptionSchema<ShellOptionsConfig> = {
  processes: { doc: 'Warm shell processes per memory cap', format: 'positive-int', default: 2, env: 'EXECGATE_ADAPTERS_SHELL_PROCESSES' },
  killGraceMs: {
    doc: 'Time past the deadline before a shell process is killed (ms)',
    format: 'non-negative-int',
    default: 50,
    env: 'EXECGATE_ADAPTERS_SHELL_KILL_GRACE_MS',
  },
  maxPools: {
    doc: 'Shell process pools kept at once (one per memory cap)',
    format: 'positive-int',
    default: 3,
    env: 'EXECGATE_ADAPTERS_SHELL_MAX_POOLS',
  },
  maxCallDepth: {
    doc: 'Deepest shell function recursion',
    format: 'positive-int',
    default: 100,
    env: 'EXECGATE_ADAPTERS_SHELL_MAX_CALL_DEPTH',
  },
  maxIterations: {
    doc: 'Loop iterations and commands one script may run',
    format: 'positive-int',
    default: 10_000_000,
    env: 'EXECGATE_ADAPTERS_SHELL_MAX_ITERATIONS',
  },
  startupMs: {
    doc: 'Routing cost model: fixed cost of a script (ms)',
    format: Number,
    default: 3,
    env: 'EXECGATE_ADAPTERS_SHELL_STARTUP_MS',
  },
  nsPerByteStage: {
    doc: 'Routing cost model: ns per input byte per pipeline stage',
    format: Number,
    default: 30,
    env: 'EXECGATE_ADAPTERS_SHELL_NS_PER_BYTE_STAGE',
  },
}
