import fs from 'node:fs'
import path from 'node:path'

/**
 * The package's version, read from the nearest package.json above this file (the repository root from src/ and
 * dist/src/, the installed package's root in node_modules), so it is written in one place only.
 */
function readPackageVersion(): string {
  for (let directory = __dirname; ; directory = path.dirname(directory)) {
    const file = path.join(directory, 'package.json')
    if (fs.existsSync(file)) return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: string }).version ?? 'unknown'
    if (path.dirname(directory) === directory) return 'unknown'
  }
}

export const EXECGATE_VERSION = readPackageVersion()
