import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Execgate } from '../src'
import { loadPyodide } from 'pyodide'
import { against, tagged, workingSubject, type Subject } from './against'
import { measure, measureInterleaved, ratio, type BenchSection } from './harness'

const CPU_BOUND = 'total = 0\nfor i in range(100_000):\n    total += i % 7\ntotal'

export const compares = true

/**
 * pyodide's warm pool through execgate (a trivial and a CPU-bound snippet) for each subject, beside the raw engine (the
 * same pyodide loaded in this process, `runPython` with nothing around it: no process boundary, no fresh globals, no
 * memory put back), and spawning python3.
 */
export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-pyodide-'))
  const gates: Execgate[] = []
  try {
    for (const subject of subjects) {
      const gate = await subject.lib.createExecgate({
        overrides: {
          execution: { enabled: ['pyodide'], adapter: 'pyodide' },
          readiness: { enabled: false },
          log: { level: 'silent' },
          fabric: { dataDir: path.join(dataDir, subject.tag) },
        },
      })
      await (gate.adapters()[0] as unknown as { warm(): Promise<void> }).warm()
      gates.push(gate)
    }
    const pyodideDir = path.dirname(require.resolve('pyodide/pyodide.js'))
    const raw = await loadPyodide({ indexURL: pyodideDir + path.sep, stdout: () => undefined, stderr: () => undefined })
    const runRaw = (code: string) => () => {
      raw.runPython(code)
    }
    const runCode = (index: number, code: string) => async () => {
      const result = await gates[index]!.execute({ language: 'python', code })
      if (result.status !== 'ok') throw new Error(`execgate answered ${result.status}: ${result.message}`)
    }
    const [rawTrivial, ...trivial] = await measureInterleaved(
      [
        { name: "raw pyodide in this process: runPython('1 + 1')", fn: runRaw('1 + 1') },
        ...subjects.map((subject, index) => ({
          name: tagged(subjects, subject, 'ExecutionService → pyodide (warm pool): 1 + 1'),
          fn: runCode(index, '1 + 1'),
        })),
      ],
      { iterations: 500, batch: 50, warmup: 20 },
    )
    // Spaced as an agent's requests arrive: each process has put its memory back before the next run comes.
    const [rawSpaced, ...spaced] = await measureInterleaved(
      [
        { name: "raw pyodide in this process: runPython('1 + 1'), 5 ms apart", fn: runRaw('1 + 1') },
        ...subjects.map((subject, index) => ({
          name: tagged(subjects, subject, 'ExecutionService → pyodide (warm pool): 1 + 1, 5 ms apart'),
          fn: runCode(index, '1 + 1'),
        })),
      ],
      { iterations: 300, pauseMs: 5 },
    )
    const [rawCpu, ...cpu] = await measureInterleaved(
      [
        { name: 'raw pyodide in this process: 100k-iteration loop', fn: runRaw(CPU_BOUND) },
        ...subjects.map((subject, index) => ({
          name: tagged(subjects, subject, 'ExecutionService → pyodide: 100k-iteration loop'),
          fn: runCode(index, CPU_BOUND),
        })),
      ],
      { iterations: 100, batch: 10, warmup: 5 },
    )
    const spawn = await measure(
      "spawn `python3 -c 'print(2)'`",
      () => {
        const child = spawnSync('/usr/bin/python3', ['-c', 'print(2)'])
        if (child.status !== 0) throw new Error('python3 -c failed')
      },
      { iterations: 20, warmup: 2 },
    )
    const work = trivial[trivial.length - 1]!
    const workSpaced = spaced[spaced.length - 1]!
    return {
      title: 'pyodide: warm pool',
      measurements: [rawTrivial!, ...trivial, rawSpaced!, ...spaced, rawCpu!, ...cpu, spawn],
      ratios: [
        `warm p50 for 1 + 1 = ${work.p50Ms.toFixed(2)} ms back to back, ${workSpaced.p50Ms.toFixed(2)} ms 5 ms apart (target ≤ 1 ms)`,
        ...subjects.map((subject, index) => ratio(tagged(subjects, subject, 'execgate/raw, 1 + 1'), trivial[index]!, rawTrivial!)),
        ...subjects.map((subject, index) => ratio(tagged(subjects, subject, 'execgate/raw, 100k loop'), cpu[index]!, rawCpu!)),
        ...(subjects.length > 1
          ? [
              against('pyodide 1 + 1', work, trivial[0]!),
              against('pyodide 1 + 1, 5 ms apart', workSpaced, spaced[0]!),
              against('pyodide 100k loop', cpu[cpu.length - 1]!, cpu[0]!),
            ]
          : []),
        `spawning python3 -c is ${(spawn.p50Ms / work.p50Ms).toFixed(1)}× the warm pool's p50`,
      ],
      notes: [
        'after answering, each process puts its interpreter memory back as it was at start (or is replaced) before it serves another run',
      ],
    }
  } finally {
    for (const gate of gates) await gate.dispose()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
