import { enforcementTable, type AdapterCapabilities } from '../../src/core'
import { seccompSummary } from '../shared/seccomp-filter'

export type ProcessLanguage = 'python' | 'javascript' | 'bash'
export const LANGUAGES: readonly ProcessLanguage[] = ['python', 'javascript', 'bash']

/**
 * What the process adapter declares. `asRoot`: each run gets a host uid of its own, so the process cap is exact;
 * `concurrency`: the uid pool's size, when there is one. `packagesOf` is read when capabilities.packages is, and
 * `engines` is filled in the background, so both are passed, not copied.
 */
export function processCapabilities(options: {
  asRoot: boolean
  concurrency: number | undefined
  packagesOf: () => readonly string[]
  engines: Record<string, string>
}): AdapterCapabilities {
  const { asRoot, concurrency, packagesOf } = options
  const syscallFilter = seccompSummary()
  return {
    languages: LANGUAGES,
    tier: 4,
    isolation:
      `bubblewrap: user/pid/net/ipc/uts/mount namespaces, read-only /usr, tmpfs workspace, ` +
      `rlimits, own uid${syscallFilter ? ', seccomp filter' : ''}`,
    enforcement: enforcementTable({
      wallTime: 'hard',
      cpuTime: 'hard',
      memory: 'hard',
      output: 'hard',
      network: 'hard',
      filesystem: 'hard',
      // The policy's static check runs before the adapter; the interpreter itself imports anything on disk.
      imports: 'soft',
      // RLIMIT_NPROC counts per host uid: exact only with a uid of the run's own, which needs root to switch to.
      processes: asRoot ? 'hard' : 'none',
    }),
    sessions: false,
    hostFunctions: false,
    // As root each run needs a uid of its own: the pool's size is how many can go at once (admission's slots).
    ...(concurrency !== undefined ? { concurrency } : {}),
    workspace: true,
    fileMounts: true,
    streaming: true,
    // Only through the egress gateway's proxy socket bound into the run's own network namespace (egress-bridge.ts).
    network: true,
    cancellable: true,
    sandboxes: true,
    get packages() {
      return packagesOf()
    },
    engines: options.engines,
    ...(syscallFilter ? { syscallFilter } : {}),
  }
}
