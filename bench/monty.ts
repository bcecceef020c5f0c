import { createRequire } from 'node:module'
import { spawnSync } from 'node:child_process'
import { createExecgate } from '../src'
import { measure, measureInterleaved, ratio, type BenchSection } from './harness'

/** Raw @pydantic/monty (in this thread) against the same code through execgate (monty runs in a worker thread). */
export async function run(): Promise<BenchSection> {
  const monty = createRequire(__filename)('@pydantic/monty') as typeof import('@pydantic/monty')
  const limits = { maxDurationSecs: 5, maxMemory: 128 * 1024 * 1024, maxRecursionDepth: 200 }
  const execgate = await createExecgate({ overrides: { execution: { enabled: ['monty'], adapter: 'monty' }, log: { level: 'silent' } } })
  try {
    const [raw, service] = await measureInterleaved([
      { name: 'raw monty: 1 + 1', fn: () => new monty.Monty('1 + 1').run({ limits, printCallback: () => undefined }) },
      {
        name: 'ExecutionService → monty adapter: 1 + 1',
        fn: async () => {
          const result = await execgate.execute({ language: 'python', code: '1 + 1' })
          if (result.status !== 'ok') throw new Error(`execgate answered ${result.status}: ${result.message}`)
        },
      },
    ], { iterations: 5000, batch: 100 })
    const spawn = await measure("spawn `python3 -c 'print(2)'`", () => {
      const child = spawnSync('/usr/bin/python3', ['-c', 'print(2)'])
      if (child.status !== 0) throw new Error('python3 -c failed')
    }, { iterations: 20, warmup: 2 })
    return {
      title: 'monty: raw interpreter vs execgate',
      measurements: [raw, service, spawn],
      ratios: [
        ratio('service/raw (1 + 1)', service, raw),
        `service p50 = ${(service.p50Ms * 1000).toFixed(0)} µs (target ≤ 50 µs)`,
        `spawning python3 -c is ${(spawn.p50Ms / service.p50Ms).toFixed(0)}× slower than the service at p50`,
      ],
      notes: ['runs under 20 ms stay on the calling thread (monty\'s own limits hold there); longer ones move to a worker thread'],
    }
  } finally {
    await execgate.dispose()
  }
}
