import { spawnSync } from 'node:child_process'
import { newQuickJSWASMModule } from 'quickjs-emscripten'
import { createExecgate } from '../src'
import { measure, measureInterleaved, ratio, type BenchSection } from './harness'

const TRIVIAL = '1+1'
const CPU_BOUND = 'let s = 0; for (let i = 0; i < 100000; i++) s += i % 7; s'

/** Raw quickjs-emscripten (fresh context per run, as the adapter does) against the same code through execgate. */
export async function run(): Promise<BenchSection> {
  const quickjs = await newQuickJSWASMModule()
  const raw = (code: string) => () => {
    const context = quickjs.newContext()
    const result = context.evalCode(code)
    if (result.error) throw new Error('raw QuickJS failed')
    context.dump(result.value)
    result.value.dispose()
    context.dispose()
  }
  const execgate = await createExecgate({ overrides: { execution: { enabled: ['quickjs'], adapter: 'quickjs' }, log: { level: 'silent' } } })
  const service = (code: string) => async () => {
    const result = await execgate.execute({ language: 'javascript', code })
    if (result.status !== 'ok') throw new Error(`execgate answered ${result.status}: ${result.message}`)
  }
  try {
    const [rawTrivial, serviceTrivial] = await measureInterleaved([
      { name: 'raw quickjs-emscripten, fresh context: 1+1', fn: raw(TRIVIAL) },
      { name: 'ExecutionService → quickjs adapter: 1+1', fn: service(TRIVIAL) },
    ], { iterations: 3000 })
    const [rawSpaced, serviceSpaced] = await measureInterleaved([
      { name: 'raw quickjs-emscripten, fresh context: 1+1, 1 ms apart', fn: raw(TRIVIAL) },
      { name: 'ExecutionService → quickjs adapter: 1+1, 1 ms apart', fn: service(TRIVIAL) },
    ], { iterations: 1000, pauseMs: 1 })
    const [rawCpu, serviceCpu] = await measureInterleaved([
      { name: 'raw quickjs-emscripten: 100k-iteration loop', fn: raw(CPU_BOUND) },
      { name: 'ExecutionService → quickjs: 100k-iteration loop', fn: service(CPU_BOUND) },
    ], { iterations: 300, batch: 20, warmup: 10 })
    const spawn = await measure("spawn `node -e '1+1'`", () => {
      const child = spawnSync(process.execPath, ['-e', '1+1'])
      if (child.status !== 0) throw new Error('node -e failed')
    }, { iterations: 20, warmup: 2 })
    return {
      title: 'quickjs: raw engine vs execgate',
      measurements: [rawTrivial, serviceTrivial, rawSpaced, serviceSpaced, rawCpu, serviceCpu, spawn],
      ratios: [
        ratio('service/raw (1+1, back to back)', serviceTrivial, rawTrivial, '≤ 1.25×'),
        ratio('service/raw (1+1, 1 ms apart)', serviceSpaced, rawSpaced, '≤ 1.25×'),
        ratio('service/raw (CPU-bound)', serviceCpu, rawCpu),
        `spawning node -e is ${(spawn.p50Ms / serviceTrivial.p50Ms).toFixed(0)}× slower than the service at p50 (target ≥ 50×)`,
      ],
      notes: ['raw runs on the main thread; the adapter runs each execution in a worker thread (round trip included)'],
    }
  } finally {
    await execgate.dispose()
  }
}
