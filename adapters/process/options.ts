import type { OptionSchema } from '../shared/option-schema'

/** The `adapters.process` config section. */
export interface ProcessOptions {
  /** bubblewrap, which builds each run's namespaces. */
  bwrapPath: string
  /** dash, pid 1 of each sandbox: its `ulimit` sets the run's rlimits (dash's flags; bash's differ). */
  shellPath: string
  /** The Python interpreter. Prefer the OS's: a pyenv shim costs ~120 ms a run and lives outside the read-only binds. */
  pythonPath: string
  /** The node binary for JavaScript. */
  nodePath: string
  /** The shell for bash. */
  bashPath: string
  /**
   * Host uids the sandboxes run as, `first-last`, one per concurrent run. RLIMIT_NPROC counts per host user, so
   * only a uid of its own makes the process cap exact. Used when execgate runs as root; otherwise runs use
   * execgate's own uid and the process cap is not enforced.
   */
  sandboxUids: string
  /**
   * Host uids persistent sandboxes (docs/sandboxes.md) run as, `first-last`, one per live sandbox, apart from
   * `sandboxUids`. Used when execgate runs as root; it also caps how many process sandboxes this host holds.
   */
  persistentUids: string
  /** Folder of persistent sandboxes' directories; empty: `<tmpdir>/execgate-sandboxes`. */
  persistentDir: string
  /** Size of the tmpfs workspace (and of any one file written), in MiB; a persistent sandbox's workspace too. */
  workspaceMb: number
  /** Open files per process in the sandbox. */
  maxOpenFiles: number
  /**
   * Keep a warm data interpreter: a python3 with numpy, pandas, matplotlib… imported, forking a fresh sandboxed child
   * per run (adapters/process/warm-python.ts). Python that imports the data stack takes it; started on first use.
   */
  warmPython: boolean
}

/** What `new ProcessAdapter()` takes: any config option; the rest default. */
export type ProcessAdapterOptions = Partial<ProcessOptions>

function uidRange(value: unknown): void {
  const match = typeof value === 'string' ? /^(\d+)-(\d+)$/.exec(value) : null
  if (!match || Number(match[1]) < 1000 || Number(match[2]) < Number(match[1]) || Number(match[2]) > 2 ** 31) {
    throw new Error('must be a uid range "first-last" with 1000 <= first <= last')
  }
}

export const PROCESS_OPTIONS_SCHEMA: OptionSchema<ProcessOptions> = {
  bwrapPath: { doc: 'bubblewrap binary', format: String, default: '/usr/bin/bwrap', env: 'EXECGATE_ADAPTERS_PROCESS_BWRAP_PATH' },
  shellPath: {
    doc: 'dash, the sandbox launcher that sets the rlimits',
    format: String,
    default: '/usr/bin/dash',
    env: 'EXECGATE_ADAPTERS_PROCESS_SHELL_PATH',
  },
  pythonPath: {
    doc: 'Python interpreter for the process adapter',
    format: String,
    default: '/usr/bin/python3',
    env: 'EXECGATE_ADAPTERS_PROCESS_PYTHON_PATH',
  },
  nodePath: {
    doc: 'node binary for the process adapter',
    format: String,
    default: '/usr/bin/node',
    env: 'EXECGATE_ADAPTERS_PROCESS_NODE_PATH',
  },
  bashPath: { doc: 'bash for the process adapter', format: String, default: '/usr/bin/bash', env: 'EXECGATE_ADAPTERS_PROCESS_BASH_PATH' },
  sandboxUids: {
    doc: 'Host uid range the sandboxes run as (first-last), when execgate runs as root',
    format: uidRange,
    default: '61000-61015',
    env: 'EXECGATE_ADAPTERS_PROCESS_SANDBOX_UIDS',
  },
  persistentUids: {
    doc: 'Host uid range persistent sandboxes run as (first-last), one per live sandbox, when execgate runs as root',
    format: uidRange,
    default: '61100-61163',
    env: 'EXECGATE_ADAPTERS_PROCESS_PERSISTENT_UIDS',
  },
  persistentDir: {
    doc: "Folder of persistent sandboxes' directories (empty: <tmpdir>/execgate-sandboxes)",
    format: String,
    default: '',
    env: 'EXECGATE_ADAPTERS_PROCESS_PERSISTENT_DIR',
  },
  workspaceMb: { doc: 'tmpfs workspace size (MiB)', format: 'positive-int', default: 64, env: 'EXECGATE_ADAPTERS_PROCESS_WORKSPACE_MB' },
  maxOpenFiles: {
    doc: 'Open files per sandboxed process',
    format: 'positive-int',
    default: 256,
    env: 'EXECGATE_ADAPTERS_PROCESS_MAX_OPEN_FILES',
  },
  warmPython: {
    doc: 'Keep a warm data interpreter that forks a sandboxed child per data run',
    format: Boolean,
    default: true,
    env: 'EXECGATE_ADAPTERS_PROCESS_WARM_PYTHON',
  },
}
