import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { spawnSync } from 'node:child_process'
import type { Execgate } from '../src'
import { ledgerKept } from './ledger-cost'
import { against, tagged, workingSubject, type Subject } from './against'
import { measure, measureInterleaved, ratio, type BenchSection } from './harness'

export const compares = true

/**
 * Raw @pydantic/monty (in this thread) against the same code through execgate (ledger on, its default, in a temp
 * dir), for each subject, all series interleaved.
 */
export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  const monty = createRequire(__filename)('@pydantic/monty') as typeof import('@pydantic/monty')
  const limits = { maxDurationSecs: 5, maxMemory: 128 * 1024 * 1024, maxRecursionDepth: 200 }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-monty-'))
  const gates: Execgate[] = []
  try {
    for (const subject of subjects) {
      gates.push(
        await subject.lib.createExecgate({
          overrides: {
            execution: { enabled: ['monty'], adapter: 'monty' },
            readiness: { enabled: false },
            log: { level: 'silent' },
            fabric: { dataDir: path.join(dataDir, subject.tag) },
          },
        }),
      )
    }
    const [raw, ...services] = await measureInterleaved(
      [
        { name: 'raw monty: 1 + 1', fn: () => new monty.Monty('1 + 1').run({ limits, printCallback: () => undefined }) },
        ...subjects.map((subject, index) => ({
          name: tagged(subjects, subject, 'ExecutionService → monty adapter: 1 + 1 (ledger on)'),
          fn: async () => {
            const result = await gates[index]!.execute({ language: 'python', code: '1 + 1' })
            if (result.status !== 'ok') throw new Error(`execgate answered ${result.status}: ${result.message}`)
          },
        })),
      ],
      { iterations: 5000, batch: 100 },
    )
    const spawn = await measure(
      "spawn `python3 -c 'print(2)'`",
      () => {
        const child = spawnSync('/usr/bin/python3', ['-c', 'print(2)'])
        if (child.status !== 0) throw new Error('python3 -c failed')
      },
      { iterations: 20, warmup: 2 },
    )
    const work = services[services.length - 1]!
    return {
      title: 'monty: raw interpreter vs execgate',
      measurements: [raw!, ...services, spawn],
      ratios: [
        ...services.map((service, index) => ratio(tagged(subjects, subjects[index]!, 'service/raw (1 + 1)'), service, raw!, '≤ 3×')),
        `service p50 = ${(work.p50Ms * 1000).toFixed(1)} µs (target ≤ 20 µs)`,
        ...(services.length > 1 ? [against('service (1 + 1)', work, services[0]!)] : []),
        `spawning python3 -c is ${(spawn.p50Ms / work.p50Ms).toFixed(0)}× slower than the service at p50`,
      ],
      notes: [
        await ledgerKept(gates),
        "runs under 20 ms stay on the calling thread (monty's own limits hold there); longer ones move to a worker thread",
      ],
    }
  } finally {
    for (const gate of gates) await gate.dispose()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
