import { spawnSync } from 'node:child_process'
import { DATA_PACKAGE_NAMES } from '../../src/core'

/**
 * The data packages (src/core/packages.ts) the configured python3 can import, found once when the adapter is made:
 * the process tier declares what scripts/setup/data-python.sh installed, no more. `find_spec` locates a package
 * without importing it (~20 ms for all six, against ~1 s to import them).
 */
export function detectDataPackages(python: string): readonly string[] {
  const probe = `import importlib.util as u, sys\nprint(','.join(n for n in sys.argv[1:] if u.find_spec(n)))`
  try {
    const child = spawnSync(python, ['-I', '-c', probe, ...DATA_PACKAGE_NAMES], { timeout: 10_000, encoding: 'utf8', env: {} })
    if (child.status !== 0) return []
    return Object.freeze(child.stdout.trim().split(',').filter(Boolean))
  } catch {
    return []
  }
}
