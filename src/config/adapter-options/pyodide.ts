import { formats } from '../formats'

export interface PyodideOptionsConfig {
  /**
   * Warm pyodide processes, each with one CPython interpreter (~4 s and ~160 MB to start, so they are started
   * with execgate, never on a request). @default 2 @env EXECGATE_ADAPTERS_PYODIDE_POOL_SIZE
   */
  poolSize: number
  /** How often a running interpreter's memory is measured (ms). @default 25 @env EXECGATE_ADAPTERS_PYODIDE_MEMORY_POLL_MS */
  memoryPollMs: number
  /**
   * Start the pool with execgate (a server) rather than on the first Python request that needs it (the CLI, which
   * runs one request). @default true @env EXECGATE_ADAPTERS_PYODIDE_WARM_ON_START
   */
  warmOnStart: boolean
}

export const pyodideSchema = {
  poolSize: { doc: 'Warm pyodide processes', format: formats.positiveInt, default: 2 },
  memoryPollMs: { doc: 'Memory measurement interval for pyodide runs (ms)', format: formats.positiveInt, default: 25 },
  warmOnStart: { doc: 'Start the pyodide pool with execgate', format: Boolean, default: true },
}
