import fs from 'node:fs'
import path from 'node:path'

/**
 * Where just-bash is loaded from. The built package carries it bundled (scripts/bundle-just-bash.mjs writes
 * dist/adapters/shared/just-bash/: the npm package's dependencies cost ~80 MB of install for commands execgate never
 * registers); from sources (tests, ts-node) it is the npm package, a devDependency. Both give the same CommonJS API.
 */

export interface JustBashLocation {
  /** The CommonJS file to require. */
  entry: string
  /** The folder everything it loads lives in (the shell child's read permission). */
  folder: string
  version: string | undefined
}

let located: JustBashLocation | undefined

export function locateJustBash(): JustBashLocation {
  located ??= findJustBash()
  return located
}

function findJustBash(): JustBashLocation {
  const bundled = path.join(__dirname, 'just-bash')
  if (fs.existsSync(path.join(bundled, 'index.cjs'))) {
    const { version } = JSON.parse(fs.readFileSync(path.join(bundled, 'package.json'), 'utf8')) as { version?: string }
    return { entry: path.join(bundled, 'index.cjs'), folder: bundled, version }
  }
  const entry = fs.realpathSync(require.resolve('just-bash'))
  const marker = `${path.sep}node_modules${path.sep}`
  const folder = entry.slice(0, entry.lastIndexOf(marker) + marker.length - 1)
  const manifest = path.join(folder, 'just-bash', 'package.json')
  const { version } = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { version?: string }
  return { entry, folder, version }
}

/** just-bash's exports (parse, getCommandNames, Bash, …), loaded on first use. */
export function requireJustBash<T>(): T {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS file found at run time, large: loaded on first use
  return require(locateJustBash().entry) as T
}
