import { execFile, spawnSync } from 'node:child_process'
import { DATA_PACKAGE_NAMES } from '../../src/core'

/**
 * The data packages (src/core/packages.ts) the configured python3 can import: the process tier declares what
 * scripts/setup/data-python.sh installed, no more. `find_spec` locates a package without importing it (~20 ms for all
 * six, against ~1 s to import them).
 */
const PROBE = `import importlib.util as u, sys\nprint(','.join(n for n in sys.argv[1:] if u.find_spec(n)))`
const PROBE_ARGS = ['-I', '-c', PROBE, ...DATA_PACKAGE_NAMES]

function parseProbe(stdout: string): readonly string[] {
  return Object.freeze(stdout.trim().split(',').filter(Boolean))
}

/**
 * Asks python3 in the background, from the adapter's constructor: the synchronous probe held `execgate serve`'s
 * thread 40–140 ms at every start (measured in its CPU profile), before a single module of the server had loaded.
 */
export function probeDataPackages(python: string): Promise<readonly string[]> {
  return new Promise((resolve) => {
    try {
      execFile(python, PROBE_ARGS, { timeout: 10_000, encoding: 'utf8', env: {} }, (error, stdout) =>
        resolve(error ? [] : parseProbe(stdout)),
      )
    } catch {
      resolve([])
    }
  })
}

/** The same answer at once, for a caller that needs it before the background probe has answered. */
export function detectDataPackages(python: string): readonly string[] {
  try {
    const child = spawnSync(python, PROBE_ARGS, { timeout: 10_000, encoding: 'utf8', env: {} })
    return child.status === 0 ? parseProbe(child.stdout) : []
  } catch {
    return []
  }
}
