import { formats } from '../formats'

export interface QuickJsOptionsConfig {
  /**
   * QuickJS stack limit in KiB. Above 256 KiB deep recursion can overflow the host's own stack before QuickJS
   * notices, which corrupts the runtime. @default 256 @env EXECGATE_ADAPTERS_QUICKJS_MAX_STACK_KIB
   */
  maxStackKiB: number
  /** How often the interrupt handler checks the deadline, in QuickJS interrupt polls. @default 1 @env EXECGATE_ADAPTERS_QUICKJS_INTERRUPT_EVERY */
  interruptEvery: number
}

export const quickjsSchema = {
  maxStackKiB: { doc: 'QuickJS stack limit (KiB, at most 256)', format: formats.positiveInt, default: 256 },
  interruptEvery: { doc: 'Interrupt polls between deadline checks', format: formats.positiveInt, default: 1 },
}
