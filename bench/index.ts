import os from 'node:os'
import { buildBaseline, workingSubject, type Subject } from './against'
import { formatSection, type BenchSection } from './harness'

/**
 * `npm run bench [section ...]`: every section in one process and one run, printed as markdown for
 * docs/benchmarks.md. A section whose backend is missing on this machine reports why instead of failing the rest.
 *
 * `npm run bench -- --against <git ref> [section ...]`: the ref is built beside this tree (bench/against.ts) and
 * every section that `compares` measures both builds in this process, interleaved, with `work/base` ratios; the
 * others run on this tree alone and say so.
 */
interface SectionModule {
  run(subjects?: readonly Subject[]): Promise<BenchSection>
  /** The section measures every subject it is given (the baseline and the working tree), interleaved. */
  compares?: boolean
}

const SECTIONS: Record<string, () => Promise<SectionModule>> = {
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
  scale: () => import('./scale'),
  sandboxes: () => import('./sandboxes'),
  snapshots: () => import('./snapshots'),
  forwarding: () => import('./forwarding'),
  data: () => import('./data'),
  limits: () => import('./limits'),
  egress: () => import('./egress'),
}

async function main(): Promise<void> {
  const args = process.argv.slice(2)
  const at = args.indexOf('--against')
  const ref = at >= 0 ? args[at + 1] : undefined
  if (at >= 0 && !ref) {
    process.stderr.write('[execgate] --against needs a git ref: npm run bench -- --against main [section ...]\n')
    process.exitCode = 2
    return
  }
  const wanted = at >= 0 ? [...args.slice(0, at), ...args.slice(at + 2)] : args
  const unknown = wanted.filter((name) => !SECTIONS[name])
  if (unknown.length) {
    process.stderr.write(`[execgate] unknown bench section(s): ${unknown.join(', ')}; known: ${Object.keys(SECTIONS).join(', ')}\n`)
    process.exitCode = 2
    return
  }
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU'
  const work = workingSubject()
  const subjects = ref ? [buildBaseline(ref), work] : [work]
  process.stdout.write(
    `# execgate benchmark\n\n${new Date().toISOString()} · Node ${process.version} · ` +
      `${os.cpus().length} × ${cpu} · ${Math.round(os.totalmem() / 2 ** 30)} GiB\n`,
  )
  if (ref) process.stdout.write(`\nbase = ${subjects[0]!.label}, work = ${work.label}: measured in this one process, interleaved\n`)
  let failed = false
  for (const name of wanted.length ? wanted : Object.keys(SECTIONS)) {
    try {
      const module = await SECTIONS[name]!()
      const section = await module.run(module.compares ? subjects : [work])
      if (ref && !module.compares) section.notes = [...(section.notes ?? []), 'not compared: this section measures the working tree only']
      process.stdout.write(formatSection(section) + '\n')
    } catch (error) {
      failed = true
      process.stdout.write(`\n## ${name}\n\nnot measured: ${(error as Error).message}\n`)
    }
  }
  if (failed) process.exitCode = 1
}

void main()
