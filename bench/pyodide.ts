import { spawnSync } from 'node:child_process'
import { createExecgate } from '../src'
import { measure, type BenchSection } from './harness'

const CPU_BOUND = 'total = 0\nfor i in range(100_000):\n    total += i % 7\ntotal'

/** pyodide's warm pool through execgate (a trivial and a CPU-bound snippet), and spawning python3 for comparison. */
export async function run(): Promise<BenchSection> {
  const execgate = await createExecgate({ overrides: { execution: { enabled: ['pyodide'], adapter: 'pyodide' }, log: { level: 'silent' } } })
  try {
    const adapter = execgate.adapters()[0] as unknown as { warm(): Promise<void> }
    await adapter.warm()
    const runCode = (code: string) => async () => {
      const result = await execgate.execute({ language: 'python', code })
      if (result.status !== 'ok') throw new Error(`execgate answered ${result.status}: ${result.message}`)
    }
    const trivial = await measure('ExecutionService → pyodide (warm pool): 1 + 1', runCode('1 + 1'), { iterations: 500 })
    const cpu = await measure('ExecutionService → pyodide: 100k-iteration loop', runCode(CPU_BOUND), { iterations: 100, warmup: 5 })
    const spawn = await measure("spawn `python3 -c 'print(2)'`", () => {
      const child = spawnSync('/usr/bin/python3', ['-c', 'print(2)'])
      if (child.status !== 0) throw new Error('python3 -c failed')
    }, { iterations: 20, warmup: 2 })
    return {
      title: 'pyodide: warm pool',
      measurements: [trivial, cpu, spawn],
      ratios: [`warm p50 for 1 + 1 = ${trivial.p50Ms.toFixed(2)} ms (target ≤ 2 ms)`, `spawning python3 -c is ${(spawn.p50Ms / trivial.p50Ms).toFixed(1)}× the warm pool's p50`],
      notes: ['after answering, each process checks that no module or builtin was changed before it serves another run'],
    }
  } finally {
    await execgate.dispose()
  }
}
