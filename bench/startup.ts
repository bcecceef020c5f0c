import { execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { createExecgate, type ExecutionRequest } from '../src'
import { against, tagged, workingSubject, type Subject } from './against'
import type { BenchSection, Measurement } from './harness'

/** With `--against <ref>`, `execgate serve`'s rows measure both builds, interleaved round by round. */
export const compares = true

/**
 * The first request after start-up against the second, per embedded adapter: each round starts a fresh execgate
 * with only that adapter's route enabled, times `createExecgate()` and the first two runs. `warm` is the default
 * (createExecgate resolves once the adapter is warm); `cold` is `warm: false`, what every first request paid before.
 */
const ROUNDS = Number(process.env.EXECGATE_BENCH_STARTUP_ROUNDS ?? 3)

const CASES: { adapter: string; enabled: string[]; request: ExecutionRequest }[] = [
  {
    adapter: 'quickjs',
    enabled: ['quickjs'],
    request: { language: 'javascript', code: '[3, 4].map((n) => n * n).reduce((a, b) => a + b)' },
  },
  { adapter: 'monty', enabled: ['monty'], request: { language: 'python', code: 'sum([12.5, 7.25, 3])' } },
  // A class: monty cannot run it, so routing escalates to pyodide (the first escalated Python).
  {
    adapter: 'pyodide',
    enabled: ['monty', 'pyodide'],
    request: { language: 'python', code: 'class Invoice:\n    total = 7\nInvoice().total * 6' },
  },
]

function summarize(name: string, samples: number[]): Measurement {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length
  return { name, iterations: sorted.length, p50Ms: at(50), p95Ms: at(95), meanMs: mean, opsPerSec: 1000 / mean }
}

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now()
  const value = await fn()
  return [value, performance.now() - started]
}

const LONG_LIMIT = { defaultPolicy: { wallTimeMs: 120_000, cpuTimeMs: 120_000 } }

const DEFAULT_ENABLED = ['quickjs', 'monty', 'shell', 'pyodide']

/** createExecgate() with the default embedded set: when it resolves (first tier warm), and when pyodide is warm too. */
async function readiness(): Promise<Measurement[]> {
  const resolved: number[] = []
  const pyodideWarm: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now()
    const execgate = await createExecgate({
      overrides: { execution: { enabled: DEFAULT_ENABLED }, readiness: { enabled: false }, log: { level: 'silent' } },
    })
    resolved.push(performance.now() - started)
    await execgate.ready(['pyodide'])
    pyodideWarm.push(performance.now() - started)
    await execgate.dispose()
  }
  return [
    summarize('createExecgate() (quickjs, monty, shell, pyodide): resolves, first tier warm', resolved),
    summarize('createExecgate(): pyodide warm behind it, from the call', pyodideWarm),
  ]
}

/**
 * CPU time (user + system) of a process and its descendants so far, from /proc: what a start costs whatever the
 * machine's load, where the wall time to ready mostly measures how many other processes share the cores.
 */
function treeCpuMs(pid: number): number | undefined {
  if (!fs.existsSync(`/proc/${pid}/stat`)) return undefined
  const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  const cpuOf = (id: number): number => {
    try {
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const fields = fs.readFileSync(`/proc/${id}/stat`, 'utf8').split(') ')[1]!.split(' ')
      return Number(fields[11]) + Number(fields[12])
    } catch {
      return 0 // exited meanwhile
    }
  }
  const childrenOf = (id: number): number[] => {
    try {
      return execFileSync('ps', ['-o', 'pid=', '--ppid', String(id)], { encoding: 'utf8' })
        .split(/\s+/)
        .filter(Boolean)
        .map(Number)
    } catch {
      return [] // ps exits 1 when there are none
    }
  }
  let ticks = 0
  const pending = [pid]
  while (pending.length) {
    const id = pending.pop()!
    ticks += cpuOf(id)
    pending.push(...childrenOf(id))
  }
  return (ticks * 1000) / ticksPerSecond
}

/** One `execgate serve` as a user starts it: from spawning the process to the first `/readyz` 200, and its CPU by then. */
async function serveOnce(bin: string): Promise<{ readyMs: number; cpuMs: number | undefined }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-serve-'))
  const started = performance.now()
  const child = spawn(process.execPath, [bin, 'serve', '--port', '0'], {
    env: { ...process.env, EXECGATE_FABRIC_DATA_DIR: dataDir, EXECGATE_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let text = ''
      // The logger writes to stderr: the "execgate serving" line carries the URL.
      child.stderr.on('data', (chunk: Buffer) => {
        text += chunk.toString()
        const match = /"url":"(http:\/\/[^"]+)"/.exec(text)
        if (match) resolve(match[1]!)
      })
      child.once('exit', (code) => reject(new Error(`execgate serve exited ${code}: ${text}`)))
    })
    for (;;) {
      const answer = await fetch(`${url}/readyz`).catch(() => undefined)
      if (answer?.status === 200) break
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const readyMs = performance.now() - started
    return { readyMs, cpuMs: treeCpuMs(child.pid!) }
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    // A graceful shutdown on a busy host can take a while; the measurement is over.
    const killer = setTimeout(() => child.kill('SIGKILL'), 5000)
    await exited
    clearTimeout(killer)
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

/** `execgate serve` from spawn to the first `/readyz` 200, per build, the builds interleaved round by round. */
async function serveReady(subjects: readonly Subject[]): Promise<{ measurements: Measurement[]; ratios: string[] }> {
  const ready = subjects.map(() => [] as number[])
  const cpu = subjects.map(() => [] as number[])
  for (let round = 0; round < ROUNDS; round++) {
    for (const [index, subject] of subjects.entries()) {
      const { readyMs, cpuMs } = await serveOnce(subject.bin)
      ready[index]!.push(readyMs)
      if (cpuMs !== undefined) cpu[index]!.push(cpuMs)
    }
  }
  const measurements: Measurement[] = []
  for (const [index, subject] of subjects.entries()) {
    measurements.push(
      summarize(
        tagged(subjects, subject, 'execgate serve: spawn to first /readyz 200 (node start, module load, first tier warm)'),
        ready[index]!,
      ),
    )
    if (cpu[index]!.length > 0)
      measurements.push(summarize(tagged(subjects, subject, 'execgate serve: CPU ms of it and its children by /readyz 200'), cpu[index]!))
  }
  const ratios: string[] = []
  if (subjects.length === 2) {
    const [base, work] = [summarize('', ready[0]!), summarize('', ready[1]!)]
    ratios.push(against('execgate serve spawn → /readyz 200', work, base))
    if (cpu[0]!.length && cpu[1]!.length)
      ratios.push(against('execgate serve CPU by /readyz 200', summarize('', cpu[1]!), summarize('', cpu[0]!)))
  }
  return { measurements, ratios }
}

export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  const serve = await serveReady(subjects)
  const measurements: Measurement[] = [...serve.measurements, ...(await readiness())]
  const ratios: string[] = [...serve.ratios]
  for (const { adapter, enabled, request } of CASES) {
    for (const warm of [true, false]) {
      const start: number[] = []
      const first: number[] = []
      const second: number[] = []
      for (let round = 0; round < ROUNDS; round++) {
        const [execgate, startMs] = await timed(() =>
          createExecgate({
            warm,
            // A limit above any cold start: a cold first request waits for its interpreter within its own time limit.
            overrides: { execution: { enabled }, readiness: { enabled: false }, log: { level: 'silent' }, security: LONG_LIMIT },
          }),
        )
        try {
          const [one, firstMs] = await timed(() => execgate.execute(request))
          const [two, secondMs] = await timed(() => execgate.execute(request))
          for (const result of [one, two]) {
            if (result.status !== 'ok' || result.adapter !== adapter)
              throw new Error(`${adapter}: the run answered ${result.status} on ${result.adapter}: ${result.message ?? ''}`)
          }
          start.push(startMs)
          first.push(firstMs)
          second.push(secondMs)
        } finally {
          await execgate.dispose()
        }
      }
      const label = `${adapter}, ${warm ? 'warm (default)' : 'cold (warm: false)'}`
      const firstRun = summarize(`${label}: first request`, first)
      const secondRun = summarize(`${label}: second request`, second)
      measurements.push(summarize(`${label}: createExecgate()`, start), firstRun, secondRun)
      ratios.push(
        `${label}: first/second request p50 = ${(firstRun.p50Ms / secondRun.p50Ms).toFixed(2)}× ` +
          `(${firstRun.p50Ms.toFixed(1)} ms vs ${secondRun.p50Ms.toFixed(1)} ms)`,
      )
    }
  }
  return {
    title: 'First request after start-up vs second (per embedded adapter)',
    measurements,
    ratios,
    notes: [
      `${ROUNDS} fresh execgates per row (EXECGATE_BENCH_STARTUP_ROUNDS); readiness off; ` +
        `pyodide with its default pool of 2 (warm-up waits for the first interpreter)`,
      'with --against: the `execgate serve` rows measure both builds (spawned in turn each ' +
        'round); the library rows measure the working tree',
      'CPU by /readyz 200: user + system time of the serve process and its children (/proc), a ' +
        'figure the machine load inflates far less than the wall time',
    ],
  }
}
