import type { SessionLimits } from '../../src/runtime'
import type { OptionSchema } from '../shared/option-schema'

/** The `adapters.pyodide` config section. */
export interface PyodideOptions {
  /**
   * Warm pyodide processes, each with one CPython interpreter (~4 s and ~160 MB to start, so they are started with
   * execgate, never on a request). */
  poolSize: number
  /** How often a running interpreter's memory is measured (ms). */
  memoryPollMs: number
  /** Start the pool with execgate (a server) rather than on the first Python request that needs it (the CLI, which runs one request). */
  warmOnStart: boolean
  /**
   * bubblewrap, which puts each pyodide process in a network namespace of its own (network: hard); absent or unusable,
   * the in-process first layer stays (network: soft). */
  bwrapPath: string
}

/** What `new PyodideAdapter()` takes: any config option (the rest default) and the session limits. */
export type PyodideAdapterOptions = Partial<PyodideOptions> & {
  /** Session TTL and count, from the `sessions` config. */
  sessions?: SessionLimits
}

export const PYODIDE_OPTIONS_SCHEMA: OptionSchema<PyodideOptions> = {
  poolSize: { doc: 'Warm pyodide processes', format: 'positive-int', default: 2, env: 'EXECGATE_ADAPTERS_PYODIDE_POOL_SIZE' },
  memoryPollMs: {
    doc: 'Memory measurement interval for pyodide runs (ms)',
    format: 'positive-int',
    default: 25,
    env: 'EXECGATE_ADAPTERS_PYODIDE_MEMORY_POLL_MS',
  },
  warmOnStart: {
    doc: 'Warm the pyodide pool behind the first tier when execgate starts (false: the first escalated run pays its load)',
    format: Boolean,
    default: true,
    env: 'EXECGATE_ADAPTERS_PYODIDE_WARM_ON_START',
  },
  bwrapPath: {
    doc: 'bubblewrap binary: each pyodide process gets a network namespace of its own (network: hard) where it works',
    format: String,
    default: '/usr/bin/bwrap',
    env: 'EXECGATE_ADAPTERS_PYODIDE_BWRAP_PATH',
  },
}
