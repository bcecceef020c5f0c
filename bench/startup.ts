import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { createExecgate, type ExecutionRequest } from '../src'
import type { BenchSection, Measurement } from './harness'

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

/** `execgate serve` as a user starts it: from spawning the process to the first `/readyz` 200. */
async function serveReady(): Promise<Measurement> {
  const samples: number[] = []
  const bin = path.join(__dirname, '..', '..', 'bin', 'execgate.js')
  for (let round = 0; round < ROUNDS; round++) {
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
      samples.push(performance.now() - started)
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
  return summarize('execgate serve: spawn to first /readyz 200 (node start, module load, first tier warm)', samples)
}

export async function run(): Promise<BenchSection> {
  const measurements: Measurement[] = [...(await readiness()), await serveReady()]
  const ratios: string[] = []
  for (const { adapter, enabled, request } of CASES) {
    for (const warm of [true, false]) {
      const start: number[] = []
      const first: number[] = []
      const second: number[] = []
      for (let round = 0; round < ROUNDS; round++) {
        const [execgate, startMs] = await timed(() =>
          createExecgate({ warm, overrides: { execution: { enabled }, readiness: { enabled: false }, log: { level: 'silent' } } }),
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
        `${label}: first/second request p50 = ${(firstRun.p50Ms / secondRun.p50Ms).toFixed(2)}× (${firstRun.p50Ms.toFixed(1)} ms vs ${secondRun.p50Ms.toFixed(1)} ms)`,
      )
    }
  }
  return {
    title: 'First request after start-up vs second (per embedded adapter)',
    measurements,
    ratios,
    notes: [
      `${ROUNDS} fresh execgates per row (EXECGATE_BENCH_STARTUP_ROUNDS); readiness off; pyodide with its default pool of 2 (warm-up waits for the first interpreter)`,
    ],
  }
}
