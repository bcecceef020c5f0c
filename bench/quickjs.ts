import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawnSync } from 'node:child_process'
import { newQuickJSWASMModule } from 'quickjs-emscripten'
import type { Execgate } from '../src'
import { ledgerKept } from './ledger-cost'
import { against, tagged, workingSubject, type Subject } from './against'
import { measure, measureInterleaved, ratio, type BenchSection, type Measurement } from './harness'

export const compares = true

const TRIVIAL = '1+1'
const CPU_BOUND = 'let s = 0; for (let i = 0; i < 100000; i++) s += i % 7; s'

/**
 * Raw quickjs-emscripten (fresh context per run, as the adapter does) against the same code through execgate (ledger
 * on, its default, in a temp dir), for each subject, all series of a kind interleaved.
 */
export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  const quickjs = await newQuickJSWASMModule()
  const raw = (code: string) => () => {
    const context = quickjs.newContext()
    const result = context.evalCode(code)
    if (result.error) throw new Error('raw QuickJS failed')
    context.dump(result.value)
    result.value.dispose()
    context.dispose()
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-quickjs-'))
  const gates: Execgate[] = []
  for (const subject of subjects) {
    gates.push(
      await subject.lib.createExecgate({
        overrides: {
          execution: { enabled: ['quickjs'], adapter: 'quickjs' },
          readiness: { enabled: false },
          log: { level: 'silent' },
          fabric: { dataDir: path.join(dataDir, subject.tag) },
        },
      }),
    )
  }
  const service = (index: number, code: string) => async () => {
    const result = await gates[index]!.execute({ language: 'javascript', code })
    if (result.status !== 'ok') throw new Error(`execgate answered ${result.status}: ${result.message}`)
  }
  const series = (name: string, code: string) =>
    subjects.map((subject, index) => ({
      name: tagged(subjects, subject, `ExecutionService → quickjs adapter: ${name}`),
      fn: service(index, code),
    }))
  const compare = (label: string, measured: Measurement[], target?: string) => [
    ...measured.slice(1).map((m, index) => ratio(tagged(subjects, subjects[index]!, label), m, measured[0]!, target)),
    ...(measured.length > 2 ? [against(label.replace('service/raw', 'service'), measured[measured.length - 1]!, measured[1]!)] : []),
  ]
  try {
    const trivial = await measureInterleaved(
      [{ name: 'raw quickjs-emscripten, fresh context: 1+1', fn: raw(TRIVIAL) }, ...series('1+1', TRIVIAL)],
      { iterations: 3000 },
    )
    const spaced = await measureInterleaved(
      [{ name: 'raw quickjs-emscripten, fresh context: 1+1, 1 ms apart', fn: raw(TRIVIAL) }, ...series('1+1, 1 ms apart', TRIVIAL)],
      { iterations: 1000, pauseMs: 1 },
    )
    const cpu = await measureInterleaved(
      [{ name: 'raw quickjs-emscripten: 100k-iteration loop', fn: raw(CPU_BOUND) }, ...series('100k-iteration loop', CPU_BOUND)],
      { iterations: 300, batch: 20, warmup: 10 },
    )
    const spawn = await measure(
      "spawn `node -e '1+1'`",
      () => {
        const child = spawnSync(process.execPath, ['-e', '1+1'])
        if (child.status !== 0) throw new Error('node -e failed')
      },
      { iterations: 20, warmup: 2 },
    )
    return {
      title: 'quickjs: raw engine vs execgate',
      measurements: [...trivial, ...spaced, ...cpu, spawn],
      ratios: [
        ...compare('service/raw (1+1, back to back)', trivial, '≤ 1.5×'),
        ...compare('service/raw (1+1, 1 ms apart)', spaced, '≤ 1.1×'),
        ...compare('service/raw (CPU-bound)', cpu),
        `spawning node -e is ${(spawn.p50Ms / trivial[trivial.length - 1]!.p50Ms).toFixed(0)}× ` +
          `slower than the service at p50 (target ≥ 50×)`,
      ],
      notes: [
        await ledgerKept(gates),
        'raw runs on the main thread; the adapter runs each execution in a worker thread (round trip included)',
      ],
    }
  } finally {
    for (const gate of gates) await gate.dispose()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
