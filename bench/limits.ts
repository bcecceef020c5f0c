import { performance } from 'node:perf_hooks'
import { createExecgate } from '../src'
import type { ExecutionRequest } from '../src/core'
import { measure, type BenchSection, type Measurement } from './harness'

/**
 * How close to a time limit each tier answers: the clocks the tests no longer assert (test/contract's timeout case,
 * process.test's SIGTERM-ignoring shell, execution-service's grace) measured here instead. Each row times a run that
 * can only end at its limit, from the call to the answer; `p50 - limit` is the overshoot. Also the first run of a
 * cold quickjs worker pool (warm: false), which the warm-up test compares with a warm one instead of timing.
 */
const LIMIT_MS = 300

const LOOPS: Array<{ adapter: string; request: ExecutionRequest }> = [
  { adapter: 'quickjs', request: { language: 'javascript', code: 'while (true) {}' } },
  { adapter: 'monty', request: { language: 'python', code: 'while True:\n    pass' } },
  { adapter: 'pyodide', request: { language: 'python', code: 'while True:\n    pass' } },
  { adapter: 'process', request: { language: 'python', code: 'while True:\n    pass' } },
  {
    adapter: 'process',
    request: { language: 'bash', code: "trap '' TERM INT HUP\nfor i in 1 2 3; do (while :; do :; done) & done\nwait" },
  },
  { adapter: 'shell', request: { language: 'bash', code: 'while true; do :; done' } },
]

export async function run(): Promise<BenchSection> {
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs', 'monty', 'pyodide', 'process', 'shell'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  const measurements: Measurement[] = []
  const notes: string[] = []
  try {
    for (const { adapter, request } of LOOPS) {
      const label =
        `${adapter} · ${request.language} loop to its ${LIMIT_MS} ms ` +
        `limit${request.code.includes('trap') ? ' (ignores SIGTERM, forks)' : ''}`
      measurements.push(
        await measure(
          label,
          async () => {
            const result = await execgate.execute({ ...request, adapter, timeoutMs: LIMIT_MS })
            if (result.status !== 'timeout') throw new Error(`${label}: ${result.status} ${result.message ?? ''}`)
          },
          { iterations: 20, warmup: 2 },
        ),
      )
    }
  } finally {
    await execgate.dispose()
  }
  const cold: number[] = []
  for (let round = 0; round < 5; round++) {
    const fresh = await createExecgate({
      warm: false,
      overrides: { execution: { enabled: ['quickjs'] }, readiness: { enabled: false }, log: { level: 'silent' } },
    })
    const started = performance.now()
    const result = await fresh.execute({ language: 'javascript', code: '6 * 7' })
    cold.push(performance.now() - started)
    await fresh.dispose()
    if (result.status !== 'ok') notes.push(`cold round ${round}: ${result.status} ${result.message ?? ''}`)
  }
  cold.sort((a, b) => a - b)
  notes.push(
    `quickjs first run on a cold pool (warm: false), 5 rounds: median ${cold[2]!.toFixed(0)} ` +
      `ms, max ${cold[4]!.toFixed(0)} ms (its worker's start counts in the duration, not in the ` +
      `time limit)`,
  )
  notes.push(`overshoot = p50 - ${LIMIT_MS} ms; the contract's test bound is ten times the limit plus the adapter's slack`)
  return { title: 'Limits: how close to the time limit each tier answers', measurements, ratios: [], notes }
}
