import fs from 'node:fs'
import path from 'node:path'

/**
 * `npm ci` installs from the committed lock and refuses one that lacks an optional dependency of a locked package
 * ("Missing: @pydantic/monty-darwin-arm64@ from lock file"). npm writes such a lock when it runs beside a
 * node_modules that holds only this platform's binaries (npm/cli#4828); `npm run lock` (scripts/regenerate-lock.mjs)
 * writes a complete one. This reads the lock as `npm ci` would and names every gap.
 */

const ROOT = path.resolve(__dirname, '..', '..')

interface LockEntry {
  version?: string
  optionalDependencies?: Record<string, string>
  os?: string[]
  cpu?: string[]
  optional?: boolean
  link?: boolean
}
type Lock = { packages: Record<string, LockEntry> }

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS script shared with scripts/regenerate-lock.mjs
const { missingOptionalDependencies } = require('../../scripts/lock-check.cjs') as {
  missingOptionalDependencies: (lock: Lock) => { parent: string; name: string; spec: string }[]
}

const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as Lock

test('every optional dependency of every locked package is in the lock (npm ci on any platform)', () => {
  const missing = missingOptionalDependencies(lock).map(({ parent, name, spec }) => `${parent} -> ${name}@${spec}`)
  expect(missing).toEqual([])
})

test('the check finds a platform package that a lock written beside node_modules drops', () => {
  const dropped = structuredClone(lock)
  delete dropped.packages['node_modules/@pydantic/monty-darwin-arm64']
  expect(missingOptionalDependencies(dropped)).toEqual([
    { parent: 'node_modules/@pydantic/monty', name: '@pydantic/monty-darwin-arm64', spec: expect.any(String) },
  ])
})

test('each platform package in the lock says which platform it is for, so npm skips it elsewhere without fetching it', () => {
  const platformPackages = Object.entries(lock.packages).filter(([location]) => /@pydantic\/monty-|@esbuild\//.test(location))
  expect(platformPackages.length).toBeGreaterThan(5)
  for (const [location, entry] of platformPackages) {
    expect({ location, optional: entry.optional, hasPlatform: Boolean(entry.cpu ?? entry.os) }).toEqual({
      location,
      optional: true,
      hasPlatform: true,
    })
  }
})
