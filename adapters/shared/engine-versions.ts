import fs from 'node:fs'
import path from 'node:path'

/**
 * The versions of the npm packages an adapter runs code with (`quickjs-emscripten`: `0.32.0`), for
 * `capabilities.engines`: each run's ledger record and signed receipt name them. Read from the installed
 * package.json along Node's own search path (no import of the package: an ESM-only package or one whose exports map
 * hides package.json is found the same way), once per process.
 */

const versions = new Map<string, string | undefined>()

function installedVersion(name: string): string | undefined {
  for (const folder of require.resolve.paths(name) ?? []) {
    try {
      const manifest = JSON.parse(fs.readFileSync(path.join(folder, name, 'package.json'), 'utf8')) as { name?: string; version?: string }
      if (manifest.name === name && typeof manifest.version === 'string') return manifest.version
    } catch {
      // not in this folder
    }
  }
  return undefined
}

/** `{ name: version }` for each package found; a missing one is left out (the adapter then reports unavailable). */
export function packageVersions(names: readonly string[]): Readonly<Record<string, string>> {
  const found: Record<string, string> = {}
  for (const name of names) {
    if (!versions.has(name)) versions.set(name, installedVersion(name))
    const version = versions.get(name)
    if (version) found[name] = version
  }
  return Object.freeze(found)
}
