import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { createExecgate, type Execgate, type Sandbox } from '../src'
import type { BenchSection, Measurement } from './harness'

/**
 * Sandbox snapshots (docs/sandboxes.md#snapshots): `sb.snapshot()` and `sandboxes.start({ from })` of a workspace of
 * 50 MB in 1,000 files (50,000 random bytes each), on the process backend and on docker (podman's Docker API), with
 * the ledger's blob store in a folder (the default). Before each snapshot one file is rewritten (untimed), so every
 * snapshot is a new archive that is really written, not a digest the blob store already holds. A restore is timed to
 * the started sandbox; its stop is untimed. On docker, the path before container snapshots (a `listFiles` and one
 * `readFile` exec per file; a start and one `writeFile` exec per file) is timed once in the same run, for the ratio.
 */

const FILES = 1000
const FILE_BYTES = 50_000
const ITERATIONS = 8
const DOCKER_SOCKET = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'

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
      execution: { enabled: ['process', 'docker'] },
      adapters: { process: { persistentDir, workspaceMb: 256 }, docker: { socketPath: DOCKER_SOCKET } },
      workspace: { maxTotalBytes: 256 * 2 ** 20, maxFiles: 2000 },
      fabric: { dataDir },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  try {
    const processTimes = await rounds(execgate, 'process')
    const dockerTimes = await rounds(execgate, 'docker')
    const before = await dockerFileByFile(execgate)
    const p50 = (samples: number[]) => summarise('', samples).p50Ms
    return {
      title: 'sandbox snapshots: 50 MB in 1,000 files',
      measurements: [
        summarise('process sandbox snapshot() · 1,000 files, 50 MB → tar in the blob folder', processTimes.snapshots),
        summarise('start({ from }) · restore the same on process', processTimes.restores),
        summarise('docker sandbox snapshot() · the same in its workspace → one tar exec', dockerTimes.snapshots),
        summarise('start({ from }) · restore the same on docker → one PUT /archive', dockerTimes.restores),
        summarise('docker, file by file (the path before) · listFiles + 1,000 readFile execs', [before.snapshot]),
        summarise('docker, file by file (the path before) · start + 1,000 writeFile execs', [before.restore]),
      ],
      ratios: [
        `docker snapshot: file by file / one tar exec = ${(before.snapshot / p50(dockerTimes.snapshots)).toFixed(1)}×`,
        `docker restore: file by file / one PUT /archive = ${(before.restore / p50(dockerTimes.restores)).toFixed(1)}×`,
      ],
      notes: [
        `${FILES} files of ${FILE_BYTES} random bytes; ${ITERATIONS} rounds after one warm-up; one file rewritten before each snapshot`,
        'process: the snapshot reads each file through the adapter contract (listFiles, readFile), writes a ' +
          'deterministic tar, hashes it and records it in ledger.sqlite; the restore reads the blob, ' +
          'checks its SHA-256, unpacks and writes each file',
        "docker: the snapshot is one exec of GNU tar over the container's writable mounts, checked and rewritten, " +
          'then recorded as on process; the restore checks the archive and sends it in one PUT /archive; the ' +
          'file-by-file rows are one round each',
      ],
    }
  } finally {
    await execgate.dispose()
    for (const folder of [dataDir, persistentDir]) fs.rmSync(folder, { recursive: true, force: true })
  }
}

/** The file rewritten before each snapshot (one of the FILES). */
const REWRITTEN = { process: 'data/0/file-0.bin', docker: 'data/file-000' }

/** Fills a sandbox of this backend with the files: on docker by one exec (1,000 writeFile execs take minutes). */
async function filled(execgate: Execgate, adapter: 'process' | 'docker'): Promise<Sandbox> {
  const sandbox = await execgate.sandboxes.start({ adapter })
  if (adapter === 'docker') {
    const done = await sandbox.exec(
      `mkdir data && head -c ${FILES * FILE_BYTES} /dev/urandom | split -b ${FILE_BYTES} -a 3 -d - data/file-`,
    )
    if (done.status !== 'ok') throw new Error(`filling the docker sandbox failed: ${done.status} ${done.message ?? ''} ${done.stderr}`)
  } else {
    for (let index = 0; index < FILES; index++) await sandbox.writeFile(`data/${index % 10}/file-${index}.bin`, randomBytes(FILE_BYTES))
  }
  return sandbox
}

async function rounds(execgate: Execgate, adapter: 'process' | 'docker'): Promise<{ snapshots: number[]; restores: number[] }> {
  const snapshots: number[] = []
  const restores: number[] = []
  const sandbox = await filled(execgate, adapter)
  try {
    for (let iteration = 0; iteration <= ITERATIONS; iteration++) {
      await sandbox.writeFile(REWRITTEN[adapter], randomBytes(FILE_BYTES))
      const t0 = performance.now()
      const snapshot = await sandbox.snapshot()
      const t1 = performance.now()
      const restored = await execgate.sandboxes.start({ adapter, from: snapshot.id })
      const t2 = performance.now()
      if ((await restored.listFiles()).length !== FILES) throw new Error(`the restored ${adapter} sandbox does not have every file`)
      await restored.stop()
      // The first round warms the blob folder and the adapter.
      if (iteration > 0) {
        snapshots.push(t1 - t0)
        restores.push(t2 - t1)
      }
    }
  } finally {
    await sandbox.stop()
  }
  return { snapshots, restores }
}

/** The docker path before container snapshots, once: every file read by its own exec, and written by its own exec. */
async function dockerFileByFile(execgate: Execgate): Promise<{ snapshot: number; restore: number }> {
  const sandbox = await filled(execgate, 'docker')
  try {
    const t0 = performance.now()
    const files: { path: string; content: Buffer }[] = []
    for (const entry of await sandbox.listFiles()) files.push({ path: entry.path, content: await sandbox.readFile(entry.path) })
    const t1 = performance.now()
    const restored = await execgate.sandboxes.start({ adapter: 'docker' })
    for (const file of files) await restored.writeFile(file.path, file.content)
    const t2 = performance.now()
    await restored.stop()
    return { snapshot: t1 - t0, restore: t2 - t1 }
  } finally {
    await sandbox.stop()
  }
}
