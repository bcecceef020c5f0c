'use strict'
// Which optional dependencies of locked packages the lock lacks. npm drops a platform package it did not install
// when it writes a lock beside node_modules (npm/cli#4828); `npm ci` then refuses the lock on every machine. Used by
// scripts/regenerate-lock.mjs and test/package/lock-platforms.test.ts.

/**
 * Where Node would find `name` from the package at `location` (its own node_modules, then each ancestor's).
 * @param {Record<string, unknown>} packages
 * @param {string} location
 * @param {string} name
 */
function resolvesFrom(packages, location, name) {
  let dir = location
  for (;;) {
    if (packages[`${dir ? `${dir}/` : ''}node_modules/${name}`]) return true
    if (dir === '') return false
    const cut = dir.lastIndexOf('/node_modules/')
    dir = cut >= 0 ? dir.slice(0, cut) : ''
  }
}

/**
 * @param {{ packages: Record<string, { optionalDependencies?: Record<string, string>, link?: boolean }> }} lock
 * @returns {{ parent: string, name: string, spec: string }[]}
 */
function missingOptionalDependencies(lock) {
  const missing = []
  for (const [location, entry] of Object.entries(lock.packages)) {
    if (entry.link) continue
    for (const [name, spec] of Object.entries(entry.optionalDependencies ?? {})) {
      if (!resolvesFrom(lock.packages, location, name)) missing.push({ parent: location, name, spec })
    }
  }
  return missing
}

module.exports = { missingOptionalDependencies }
