// Bundles just-bash (the shell adapter's interpreter) into dist/adapters/shared/just-bash/: one CommonJS file, its
// version, and the licences of what it holds. Why: the just-bash package depends on sql.js (30 MB), turndown with
// domino (9 MB), node-liblzma (5 MB) and ships a CPython build (10 MB) for commands execgate never registers
// (sqlite3, python, html-to-markdown's browser DOM, xz); installed as a dependency it was a third of a fresh
// install. Bundled, the commands execgate uses cost ~2.5 MB and the package is a devDependency. sql.js, zstd and
// liblzma stay external: only the unregistered commands reach them, and they would answer "cannot find module".
// `npm run build` runs it; adapters/shared/just-bash.ts loads the bundle from dist and the package from sources.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { build } from 'esbuild'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const require = createRequire(path.join(root, 'package.json'))
const out = path.join(root, 'dist', 'adapters', 'shared', 'just-bash')
fs.rmSync(out, { recursive: true, force: true })

const entry = require.resolve('just-bash')
const manifest = JSON.parse(fs.readFileSync(path.join(root, 'node_modules', 'just-bash', 'package.json'), 'utf8'))
const result = await build({
  absWorkingDir: root,
  entryPoints: [entry],
  outfile: path.join(out, 'index.cjs'),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['sql.js', 'node-liblzma', '@mongodb-js/zstd'],
  legalComments: 'eof',
  metafile: true,
  logLevel: 'warning',
})

// Every npm package whose code is in the bundle, with its licence text when it ships one.
const packages = new Map()
for (const input of Object.keys(result.metafile.inputs)) {
  const at = input.lastIndexOf('node_modules/')
  const match = at < 0 ? null : /^node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input.slice(at))
  if (match && !packages.has(match[1])) packages.set(match[1], path.join(root, input.slice(0, at), 'node_modules', match[1]))
}
const notices = [...packages].sort().map(([name, folder]) => {
  const pkg = JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8'))
  const licenceFile = fs.readdirSync(folder).find((file) => /^licen[cs]e(\.(md|txt))?$/i.test(file))
  const text = licenceFile ? fs.readFileSync(path.join(folder, licenceFile), 'utf8').trim() : `(${pkg.license})`
  return `## ${name}@${pkg.version} (${pkg.license})\n\n${text}\n`
})
fs.writeFileSync(path.join(out, 'THIRD-PARTY-NOTICES.md'), `# Bundled in index.cjs\n\n${notices.join('\n')}`)
fs.writeFileSync(
  path.join(out, 'package.json'),
  `${JSON.stringify({ name: 'just-bash', version: manifest.version, main: 'index.cjs' }, null, 2)}\n`,
)
