#!/usr/bin/env node
// Regenerates package-lock.json so that `npm ci` works on every platform: `npm run lock`.
//
// Why not plain `npm install`: when npm writes a lock while node_modules exists, it records only the optional
// platform packages that were installed here (npm/cli#4828), so the lock lacks e.g. @pydantic/monty's darwin and
// win32 binaries and `npm ci` refuses it everywhere ("Missing: … from lock file"). This script resolves the lock in
// an empty temporary directory (package.json + the current lock, no node_modules), where npm records every platform,
// then completes what the registry could not describe (see completeOptionalPlatforms) and copies the lock back.
// Locked versions stay as they are; only packages package.json newly asks for are resolved.
import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'

const { missingOptionalDependencies } = createRequire(import.meta.url)('./lock-check.cjs')
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

/** npm's platform fields for a napi-rs / esbuild style platform package, read from its name. */
export function platformFromName(name) {
  const suffix = name.split('/').pop()
  const os = ['darwin', 'linux', 'win32', 'freebsd', 'android', 'openbsd', 'netbsd', 'sunos', 'aix'].find(
    (o) => suffix.includes(`-${o}-`) || suffix.startsWith(`${o}-`),
  )
  const cpu = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 's390x', 'riscv64', 'loong64', 'wasm32', 'mips64el'].find((c) =>
    new RegExp(`(^|-)${c}(-|$)`).test(suffix),
  )
  const libc = /-musl(eabihf)?(-|$)/.test(suffix) ? 'musl' : /-gnu(eabihf)?(-|$)/.test(suffix) ? 'glibc' : undefined
  if (!cpu) return undefined
  return { ...(os ? { os: [os] } : {}), cpu: [cpu], ...(libc ? { libc: [libc] } : {}) }
}

function registryManifest(spec) {
  try {
    return JSON.parse(execFileSync(npm, ['view', spec, '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }))
  } catch {
    return undefined
  }
}

/**
 * An optional platform package the registry does not answer for (a mirror that never fetched it, or a transient
 * 404) is dropped from the lock by npm without a word. It is written back from its parent's optionalDependencies,
 * with the platform fields npm needs to skip it elsewhere; npm fetches it by name and version where it applies.
 */
function completeOptionalPlatforms(lock) {
  const added = []
  for (const { parent, name, spec } of missingOptionalDependencies(lock)) {
    const manifest = registryManifest(`${name}@${spec}`)
    const platform = manifest ? { os: manifest.os, cpu: manifest.cpu, libc: manifest.libc } : platformFromName(name)
    if (!platform)
      throw new Error(`${parent} wants optional ${name}@${spec}: the registry has no such version and its name names no platform`)
    const version = manifest?.version ?? spec
    const entry = { version, ...(manifest?.dist?.integrity ? { integrity: manifest.dist.integrity } : {}) }
    for (const key of ['cpu', 'libc', 'os']) if (platform[key]) entry[key] = platform[key]
    const parentEntry = lock.packages[parent]
    if (parentEntry.dev) entry.dev = true
    entry.optional = true
    if (manifest?.license) entry.license = manifest.license
    const location = parent.includes('/node_modules/') ? `${parent}/node_modules/${name}` : `node_modules/${name}`
    lock.packages[location] = entry
    added.push(`${location}@${version}${manifest ? '' : ' (from its name: the registry does not answer for it)'}`)
  }
  lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))))
  return added
}

function main() {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-lock-'))
  try {
    fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(work, 'package.json'))
    if (fs.existsSync(path.join(ROOT, 'package-lock.json')))
      fs.copyFileSync(path.join(ROOT, 'package-lock.json'), path.join(work, 'package-lock.json'))
    if (fs.existsSync(path.join(ROOT, '.npmrc'))) fs.copyFileSync(path.join(ROOT, '.npmrc'), path.join(work, '.npmrc'))
    execFileSync(npm, ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: work, stdio: 'inherit' })
    const lock = JSON.parse(fs.readFileSync(path.join(work, 'package-lock.json'), 'utf8'))
    const added = completeOptionalPlatforms(lock)
    fs.writeFileSync(path.join(ROOT, 'package-lock.json'), JSON.stringify(lock, null, 2) + '\n')
    for (const line of added) process.stdout.write(`[lock] added ${line}\n`)
    const missing = missingOptionalDependencies(lock)
    if (missing.length > 0) throw new Error(`still missing: ${missing.map((m) => `${m.name} (of ${m.parent})`).join(', ')}`)
    process.stdout.write('[lock] package-lock.json holds every optional platform package; run `npm install` to sync node_modules\n')
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main()
