import type { SessionLimits } from '../../src/runtime'
import type { OptionSchema } from '../shared/option-schema'

/** The largest stack QuickJS may use before deep recursion can overflow the host stack instead; also the default. */
export const MAX_SAFE_STACK_KIB = 256

/** The `adapters.quickjs` config section. */
export interface QuickJsOptions {
  /**
   * QuickJS stack limit in KiB. Above 256 KiB deep recursion can overflow the host's own stack before QuickJS
   * notices, which corrupts the runtime.
   */
  maxStackKiB: number
  /** Worker threads running QuickJS, one execution each at a time. */
  workers: number
  /** How long past its deadline a run may stay inside native code (a huge `join`, a regex) before its worker is killed and replaced. */
  killGraceMs: number
  /**
   * Ceiling on one worker's WebAssembly memory (MiB), below QuickJS's own allocator. QuickJS's malloc limit does not
   * hold for every allocation pattern: `new Array(1e6).fill(1)` in a loop grew one worker to 2 GB under a 64 MiB
   * limit. Past this ceiling the wasm memory cannot grow, so QuickJS answers out of memory. A policy allowing more
   * memory than this is held here.
   */
  maxMemoryMiB: number
  /**
   * A worker whose WebAssembly memory grew past this (MiB) during a run is replaced after it: wasm memory never
   * shrinks, and a grown worker would hold that memory in the server for good.
   */
  recycleAboveMiB: number
}

/** What `new QuickJsAdapter()` takes: any config option (the rest default) and the session limits. */
export type QuickJsAdapterOptions = Partial<QuickJsOptions> & {
  /** Session TTL and count, from the `sessions` config. */
  sessions?: SessionLimits
  /** Start the workers now rather than at the first run or `warmUp()` (the CLI warms on first use). @default true */
  warmOnStart?: boolean
}

export const QUICKJS_OPTIONS_SCHEMA: OptionSchema<QuickJsOptions> = {
  maxStackKiB: {
    doc: 'QuickJS stack limit (KiB, at most 256)',
    format: 'positive-int',
    default: MAX_SAFE_STACK_KIB,
    env: 'EXECGATE_ADAPTERS_QUICKJS_MAX_STACK_KI_B',
  },
  workers: { doc: 'QuickJS worker threads', format: 'positive-int', default: 2, env: 'EXECGATE_ADAPTERS_QUICKJS_WORKERS' },
  killGraceMs: {
    doc: 'Time in native code past the deadline before the worker is killed (ms)',
    format: 'non-negative-int',
    default: 50,
    env: 'EXECGATE_ADAPTERS_QUICKJS_KILL_GRACE_MS',
  },
  maxMemoryMiB: {
    doc: "Ceiling on one QuickJS worker's WebAssembly memory (MiB)",
    format: 'positive-int',
    default: 256,
    env: 'EXECGATE_ADAPTERS_QUICKJS_MAX_MEMORY_MI_B',
  },
  recycleAboveMiB: {
    doc: 'A worker whose WebAssembly memory grew past this is replaced after the run (MiB)',
    format: 'positive-int',
    default: 128,
    env: 'EXECGATE_ADAPTERS_QUICKJS_RECYCLE_ABOVE_MI_B',
  },
}
