// Bundles the web console (console/) into dist/console: one JavaScript file and one stylesheet, each named by its
// content hash (served with a year of caching), and index.html pointing at them (revalidated on every load).
// `npm run build` runs it; src/server/console-assets.ts serves the result at /console/.
import fs from 'node:fs'
import path from 'node:path'
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..')
const out = path.join(root, 'dist', 'console')
fs.rmSync(out, { recursive: true, force: true })

const result = await build({
  absWorkingDir: root,
  entryPoints: { console: 'console/src/main.ts', styles: 'console/styles.css' },
  bundle: true,
  minify: true,
  format: 'esm',
  // Browsers of the last few years: fetch streams, TextDecoderStream, :focus-visible.
  target: ['chrome100', 'firefox105', 'safari15'],
  outdir: out,
  entryNames: '[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
})

const outputs = Object.keys(result.metafile.outputs).map((file) => path.basename(file))
const js = outputs.find((file) => file.endsWith('.js'))
const css = outputs.find((file) => file.endsWith('.css'))
const template = fs.readFileSync(path.join(root, 'console', 'index.html'), 'utf8')
fs.writeFileSync(path.join(out, 'index.html'), template.replace('{{js}}', `./${js}`).replace('{{css}}', `./${css}`))

const sizes = fs.readdirSync(out).map((file) => {
  const body = fs.readFileSync(path.join(out, file))
  return { file, bytes: body.length, gzipped: gzipSync(body).length }
})
const total = sizes.reduce((sum, item) => sum + item.gzipped, 0)
const listed = sizes.map((item) => `${item.file} ${(item.bytes / 1024).toFixed(1)} KiB (${(item.gzipped / 1024).toFixed(1)} KiB gzipped)`)
console.log(`[execgate] console bundle: ${listed.join(', ')}; ${(total / 1024).toFixed(1)} KiB gzipped in all`)
