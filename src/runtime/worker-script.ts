import fs from 'node:fs'
import path from 'node:path'
import { Worker, type WorkerOptions } from 'node:worker_threads'

/**
 * Starts a worker thread from a module beside the caller. Compiled code (dist/) has `<name>.js` and runs it
 * directly; from sources (ts-jest, ts-node) only `<name>.ts` exists, and a one-line bootstrap registers ts-node
 * in transpile-only mode first, so tests exercise the same worker code as production.
 */
export function startWorker(directory: string, name: string, options: WorkerOptions = {}): Worker {
  const compiled = path.join(directory, `${name}.js`)
  if (fs.existsSync(compiled)) return new Worker(compiled, options)
  const source = path.join(directory, `${name}.ts`)
  if (!fs.existsSync(source)) throw new Error(`worker module ${name} not found in ${directory}`)
  const bootstrap =
    `require('ts-node').register({ transpileOnly: true, compilerOptions: { module: 'commonjs' ` + `} }); require(${JSON.stringify(source)})`
  return new Worker(bootstrap, { ...options, eval: true })
}
