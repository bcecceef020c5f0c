import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { createExecgate, type Sandbox } from '../src'
import type { BenchSection, Measurement } from './harness'

/**
 * Sandbox snapshots (docs/sandboxes.md#snapshots): `sb.snapshot()` and `sandboxes.start({ from })` of a workspace of
 * 50 MB in 1,000 files (50,000 random bytes each), on the process backend, with the ledger's blob store in a folder
 * (the default). Before each snapshot one file is rewritten (untimed), so every snapshot is a new archive that is
 * really written, not a digest the blob store already holds. A restore is timed to the started sandbox; its stop is
 * untimed.
 */

const FILES = 1000
const FILE_BYTES = 50_000
const ITERATIONS = 8

function summarise(name: string, samples: number[]): Measurement {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
  const total = samples.reduce((sum, value) => sum + value, 0)
  return {
    name,
    iterations: samples.length,
    p50Ms: at(50),
    p95Ms: at(95),
    meanMs: total / samples.length,
    opsPerSec: 1000 / (total / samples.length),
  }
}

export async function run(): Promise<BenchSection> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-snapshots-'))
  const persistentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-snapshots-process-'))
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['process'] },
      adapters: { process: { persistentDir, workspaceMb: 256 } },
      workspace: { maxTotalBytes: 256 * 2 ** 20, maxFiles: 2000 },
      fabric: { dataDir },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  const snapshots: number[] = []
  const restores: number[] = []
  let sandbox: Sandbox | undefined
  try {
    sandbox = await execgate.sandboxes.start({ adapter: 'process' })
    for (let index = 0; index < FILES; index++) await sandbox.writeFile(`data/${index % 10}/file-${index}.bin`, randomBytes(FILE_BYTES))
    for (let iteration = 0; iteration <= ITERATIONS; iteration++) {
      await sandbox.writeFile('data/0/file-0.bin', randomBytes(FILE_BYTES))
      const t0 = performance.now()
      const snapshot = await sandbox.snapshot()
      const t1 = performance.now()
      const restored = await execgate.sandboxes.start({ adapter: 'process', from: snapshot.id })
      const t2 = performance.now()
      if ((await restored.listFiles()).length !== FILES) throw new Error('the restored sandbox does not have every file')
      await restored.stop()
      // The first round warms the blob folder and the adapter.
      if (iteration > 0) {
        snapshots.push(t1 - t0)
        restores.push(t2 - t1)
      }
    }
  } finally {
    await sandbox?.stop()
    await execgate.dispose()
    for (const folder of [dataDir, persistentDir]) fs.rmSync(folder, { recursive: true, force: true })
  }
  return {
    title: 'sandbox snapshots: 50 MB in 1,000 files',
    measurements: [
      summarise('process sandbox snapshot() · 1,000 files, 50 MB → tar in the blob folder', snapshots),
      summarise('start({ from }) · restore the same on process', restores),
    ],
    ratios: [],
    notes: [
      `${FILES} files of ${FILE_BYTES} random bytes; ${ITERATIONS} rounds after one warm-up; one file rewritten before each snapshot`,
      'the snapshot reads each file through the adapter contract (listFiles, readFile), writes a ' +
        'deterministic tar, hashes it and records it in ledger.sqlite; the restore reads the blob, ' +
        'checks its SHA-256, unpacks and writes each file',
    ],
  }
}
