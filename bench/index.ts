import os from 'node:os'
import { formatSection, type BenchSection } from './harness'

/**
 * `npm run bench [section ...]`: every section in one process and one run, printed as markdown for
 * docs/benchmarks.md. A section whose backend is missing on this machine reports why instead of failing the rest.
 */
const SECTIONS: Record<string, () => Promise<{ run(): Promise<BenchSection> }>> = {
  quickjs: () => import('./quickjs'),
  monty: () => import('./monty'),
  pyodide: () => import('./pyodide'),
  process: () => import('./process'),
  seccomp: () => import('./seccomp'),
  receipts: () => import('./receipts'),
  shell: () => import('./shell'),
  routing: () => import('./routing'),
  startup: () => import('./startup'),
  docker: () => import('./docker'),
  http: () => import('./http'),
  lambda: () => import('./lambda'),
  tasks: () => import('./tasks'),
  admission: () => import('./admission'),
  ledger: () => import('./ledger'),
  plans: () => import('./plans'),
  sandboxes: () => import('./sandboxes'),
  limits: () => import('./limits'),
}

async function main(): Promise<void> {
  const wanted = process.argv.slice(2)
  const unknown = wanted.filter((name) => !SECTIONS[name])
  if (unknown.length) {
    process.stderr.write(`[execgate] unknown bench section(s): ${unknown.join(', ')}; known: ${Object.keys(SECTIONS).join(', ')}\n`)
    process.exitCode = 2
    return
  }
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU'
  process.stdout.write(`# execgate benchmark\n\n${new Date().toISOString()} · Node ${process.version} · ${os.cpus().length} × ${cpu} · ${Math.round(os.totalmem() / 2 ** 30)} GiB\n`)
  let failed = false
  for (const name of wanted.length ? wanted : Object.keys(SECTIONS)) {
    try {
      const section = await (await SECTIONS[name]!()).run()
      process.stdout.write(formatSection(section) + '\n')
    } catch (error) {
      failed = true
      process.stdout.write(`\n## ${name}\n\nnot measured: ${(error as Error).message}\n`)
    }
  }
  if (failed) process.exitCode = 1
}

void main()
