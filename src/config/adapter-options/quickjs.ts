import { formats } from '../formats'

export interface QuickJsOptionsConfig {
  /**
   * QuickJS stack limit in KiB. Above 256 KiB deep recursion can overflow the host's own stack before QuickJS
   * notices, which corrupts the runtime. @default 256 @env EXECGATE_ADAPTERS_QUICKJS_MAX_STACK_KIB
   */
  maxStackKiB: number
  /** Worker threads running QuickJS, one execution each at a time. @default 2 @env EXECGATE_ADAPTERS_QUICKJS_WORKERS */
  workers: number
  /**
   * How long past its deadline a run may stay inside native code (a huge `join`, a regex) before its worker is
   * killed and replaced. @default 50 @env EXECGATE_ADAPTERS_QUICKJS_KILL_GRACE_MS
   */
  killGraceMs: number
}

export const quickjsSchema = {
  maxStackKiB: { doc: 'QuickJS stack limit (KiB, at most 256)', format: formats.positiveInt, default: 256 },
  workers: { doc: 'QuickJS worker threads', format: formats.positiveInt, default: 2 },
  killGraceMs: { doc: 'Time in native code past the deadline before the worker is killed (ms)', format: formats.nonNegativeInt, default: 50 },
}
