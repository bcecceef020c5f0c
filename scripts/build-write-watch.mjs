// Builds adapters/pyodide/write-watch.c into dist/adapters/pyodide/write-watch.node: the kernel's account of which
// pages of pyodide's memory a run wrote (see the C file). One `cc` call, no headers or downloads: ~0.2 s. Where it
// cannot be built (not Linux, no C compiler) the build goes on without it and pyodide compares its whole memory after
// each run instead: the same isolation, ~3 ms slower a run. `npm run build` runs it.
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const source = path.join(root, 'adapters', 'pyodide', 'write-watch.c')
const out = path.join(root, 'dist', 'adapters', 'pyodide', 'write-watch.node')
fs.rmSync(out, { force: true })

if (process.platform !== 'linux') {
  console.log(`write-watch: not built on ${process.platform} (Linux only); pyodide compares its memory instead`)
} else {
  fs.mkdirSync(path.dirname(out), { recursive: true })
  const compiler = process.env.CC || 'cc'
  const built = spawnSync(compiler, ['-O2', '-Wall', '-shared', '-fPIC', '-o', out, source], { encoding: 'utf8' })
  if (built.status !== 0) {
    fs.rmSync(out, { force: true })
    const why = built.error ? built.error.message : built.stderr.trim().split('\n').slice(-3).join(' ')
    console.log(`write-watch: not built (${why}); pyodide compares its memory instead`)
  }
}
