import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import type { Execgate, ExecutionRequest } from '../src'
import { ArtifactLedger, DirectoryBlobStore, SqliteLedgerStore, type RecordDraft, type RunRecord } from '../src/fabric/ledger'
import { sha256 } from '../src/fabric/ledger/run-capture'
import { against, tagged, workingSubject, type Subject } from './against'
import { describeCost, pairedCost } from './ledger-cost'
import { measureInterleaved, type BenchSection, type Measurement } from './harness'

/**
 * The artifact ledger's cost (docs/ledger.md), on the embedded default (SQLite records and a blob folder in a temp dir):
 * - a trivial run with the ledger and without it, in one process, interleaved: what recording adds on the result's
 *   path at p50 (target ≤ 0.2 ms), and the whole cost per run (capture, hand-over, hashing, blob and record writes,
 *   the WAL checkpoint), wall and CPU of every thread, as the median of paired on/off batches (bench/ledger-cost.ts);
 * - lineage of one artifact among 100,000 records (10,000 chains of 10 runs, each run reading the previous run's file
 *   with a code shared by its chain), p95 over 1000 artifacts picked at random (target ≤ 50 ms), and of a "hub"
 *   (a code used by 10 runs of every chain it is shared by) for contrast.
 */

const RECORDS = Number(process.env.EXECGATE_BENCH_LEDGER_RECORDS ?? 100_000)
const CHAIN = 10
/** Paired on/off batches for the whole cost (bench/ledger-cost.ts), and the idle settle after each batch. */
const PAIRS = Number(process.env.EXECGATE_BENCH_LEDGER_PAIRS ?? 41)
const TAIL_MS = Number(process.env.EXECGATE_BENCH_LEDGER_TAIL_MS ?? 0)
/** Runs in one batch of a pair: the 1,000-run loops ending in a flush for quickjs (~0.1 s), 2,000 for monty. */
const RUNS = {
  quickjs: Number(process.env.EXECGATE_BENCH_LEDGER_QUICKJS_RUNS ?? 1000),
  monty: Number(process.env.EXECGATE_BENCH_LEDGER_MONTY_RUNS ?? 2000),
}

function series(name: string, samples: number[]): Measurement {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!
  const total = samples.reduce((sum, value) => sum + value, 0)
  return {
    name,
    iterations: samples.length,
    p50Ms: at(50),
    p95Ms: at(95),
    meanMs: total / samples.length,
    opsPerSec: (samples.length / total) * 1000,
  }
}

async function open(subject: Subject, dataDir: string, ledger: boolean, adapter: 'quickjs' | 'monty'): Promise<Execgate> {
  return subject.lib.createExecgate({
    overrides: {
      execution: { enabled: [adapter], adapter },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir, ledger: { enabled: ledger } },
    },
  })
}

async function recordingCost(adapter: 'quickjs' | 'monty', dataDir: string, subjects: readonly Subject[]) {
  const request: ExecutionRequest = adapter === 'quickjs' ? { language: 'javascript', code: '1+1' } : { language: 'python', code: '1 + 1' }
  const pairs: { subject: Subject; on: Execgate; off: Execgate }[] = []
  try {
    for (const subject of subjects) {
      pairs.push({
        subject,
        on: await open(subject, path.join(dataDir, `${adapter}-${subject.tag}-on`), true, adapter),
        off: await open(subject, path.join(dataDir, `${adapter}-${subject.tag}-off`), false, adapter),
      })
    }
    const run = (execgate: Execgate) => async () => {
      const result = await execgate.execute(request)
      if (result.status !== 'ok') throw new Error(`${adapter} answered ${result.status}: ${result.message}`)
    }
    const measured = await measureInterleaved(
      pairs.flatMap(({ subject, on, off }) => [
        { name: tagged(subjects, subject, `${adapter} ${request.code}, ledger on (per run, result's path)`), fn: run(on) },
        { name: tagged(subjects, subject, `${adapter} ${request.code}, ledger off`), fn: run(off) },
      ]),
      { iterations: 3000, batch: 100 },
    )
    for (const { on } of pairs) await on.ledger.flush()
    // Whole cost: paired batches, on and off, their differences' median (bench/ledger-cost.ts says what it counts).
    const costs = await pairedCost(
      pairs.map(({ on }) => on),
      request,
      { runs: RUNS[adapter], pairs: PAIRS, tailMs: TAIL_MS },
    )
    const ratios: string[] = []
    for (const [index, { subject }] of pairs.entries()) {
      const on = measured[index * 2]!
      const off = measured[index * 2 + 1]!
      const cost = costs[index]!
      ratios.push(
        tagged(
          subjects,
          subject,
          `${adapter}: recording adds ${((on.p50Ms - off.p50Ms) * 1000).toFixed(1)} µs at p50 on ` +
            `the result's path (${on.p50Ms.toFixed(3)} vs ${off.p50Ms.toFixed(3)} ms, ` +
            `${(on.p50Ms / off.p50Ms).toFixed(2)}×)`,
        ),
        tagged(
          subjects,
          subject,
          `${adapter}: whole ledger cost a run, wall (median of ${cost.pairs} paired ${cost.runs}-run batches ending in a ` +
            `flush, one execgate recording − silenced; target ≤ 10 µs): ${describeCost(cost.wall)}`,
        ),
        tagged(subjects, subject, `${adapter}: whole ledger CPU a run, every thread, same pairs: ${describeCost(cost.cpu)}`),
        tagged(subjects, subject, `${adapter}: of which the request thread's CPU: ${describeCost(cost.thread)}`),
      )
    }
    if (pairs.length > 1) {
      ratios.push(against(`${adapter}: ledger on`, measured[measured.length - 2]!, measured[0]!))
      const [base, work] = [costs[0]!, costs[costs.length - 1]!]
      ratios.push(
        `${adapter}: whole ledger cost a run, wall, work ${work.wall.median.toFixed(1)} µs vs base ${base.wall.median.toFixed(1)} µs`,
        `${adapter}: whole ledger CPU a run (every thread), work ${work.cpu.median.toFixed(1)} µs vs base ` +
          `${base.cpu.median.toFixed(1)} µs; the request thread's, work ${work.thread.median.toFixed(1)} µs vs base ` +
          `${base.thread.median.toFixed(1)} µs`,
      )
    }
    return { measurements: measured, ratios }
  } finally {
    for (const { on, off } of pairs) {
      await on.dispose()
      await off.dispose()
    }
  }
}

/** 10,000 chains of 10 runs: each run reads the previous run's file and writes its own; a chain's runs share one code. */
function chainDraft(chain: number, step: number): RecordDraft {
  const file = (at: number) => {
    const content = `chain ${chain} step ${at}`
    return { path: `step-${at}.txt`, sha256: sha256(content), size: Buffer.byteLength(content), mediaType: 'text/plain' }
  }
  const code = `transform for chain ${chain}`
  const entry: RunRecord = {
    kind: 'run',
    runId: `run-${chain}-${step}`,
    traceId: `trace-${chain}-${step}`,
    tenant: 'bench',
    taskId: `task-${chain}-${step}`,
    attempt: 1,
    language: 'python',
    adapter: 'monty',
    tier: 1,
    execgateVersion: 'bench',
    code: { path: 'code', sha256: sha256(code), size: Buffer.byteLength(code), mediaType: 'text/x-python' },
    startedAt: new Date().toISOString(),
    endedAt: new Date().toISOString(),
    status: 'ok',
    wallMs: 1,
    inputs: step > 0 ? [file(step - 1)] : [],
    outputs: [file(step)],
    stdout: { sha256: sha256(''), size: 0, stored: false },
    stderr: { sha256: sha256(''), size: 0, stored: false },
  }
  return { tenant: 'bench', id: entry.runId, recordedAt: Date.now(), entry }
}

async function lineageAtScale(dataDir: string) {
  const store = new SqliteLedgerStore({ file: path.join(dataDir, 'lineage', 'ledger.sqlite') })
  const chains = Math.ceil(RECORDS / CHAIN)
  const built = performance.now()
  for (let chain = 0; chain < chains; chain += 100) {
    const drafts: RecordDraft[] = []
    for (let c = chain; c < Math.min(chain + 100, chains); c++) for (let step = 0; step < CHAIN; step++) drafts.push(chainDraft(c, step))
    await store.append(drafts)
  }
  const buildMs = performance.now() - built
  const ledger = new ArtifactLedger({
    openRecords: () => store,
    openBlobs: () => new DirectoryBlobStore(path.join(dataDir, 'lineage', 'blobs')),
    execgateVersion: 'bench',
  })
  try {
    const samples: number[] = []
    let largest = 0
    for (let i = 0; i < 1000; i++) {
      const chain = Math.floor(Math.random() * chains)
      const step = Math.floor(Math.random() * CHAIN)
      const target = sha256(`chain ${chain} step ${step}`)
      const t0 = performance.now()
      const lineage = await ledger.lineage(target, { tenant: 'bench' })
      samples.push(performance.now() - t0)
      largest = Math.max(largest, lineage.ancestors.activities.length + lineage.descendants.activities.length)
    }
    const hub = sha256('transform for chain 0')
    const hubSamples: number[] = []
    for (let i = 0; i < 50; i++) {
      const t0 = performance.now()
      await ledger.lineage(hub, { tenant: 'bench' })
      hubSamples.push(performance.now() - t0)
    }
    const verifyStarted = performance.now()
    const report = await ledger.verify({ tenant: 'bench' })
    const verifyMs = performance.now() - verifyStarted
    const lineage = series(`lineage of one file among ${chains * CHAIN} records (SQLite), random pick`, samples)
    return {
      measurements: [lineage, series('lineage of a code used by 10 runs (its chain)', hubSamples)],
      ratios: [
        `lineage among ${chains * CHAIN} records: p95 ${lineage.p95Ms.toFixed(2)} ms (target ≤ 50 ms); up to ${largest} runs per answer`,
      ],
      notes: [
        `building the ${chains * CHAIN}-record chain store: ${(buildMs / 1000).toFixed(1)} s ` +
          `(${Math.round((chains * CHAIN) / (buildMs / 1000))} records/s appended in batches of ` +
          `1000)`,
        `verify of the whole ${report.records}-record chain: ${(verifyMs / 1000).toFixed(2)} s (${report.ok ? 'ok' : 'BROKEN'})`,
      ],
    }
  } finally {
    await ledger.close()
  }
}

export const compares = true

export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-ledger-'))
  try {
    const quickjs = await recordingCost('quickjs', dataDir, subjects)
    const monty = await recordingCost('monty', dataDir, subjects)
    // Lineage reads the working tree's store only: it is a query's cost, not the request path's.
    const lineage =
      process.env.EXECGATE_BENCH_LEDGER_LINEAGE === '0'
        ? { measurements: [], ratios: [], notes: ['lineage not measured (EXECGATE_BENCH_LEDGER_LINEAGE=0)'] }
        : await lineageAtScale(dataDir)
    return {
      title: 'ledger: recording provenance, and lineage at scale',
      measurements: [...quickjs.measurements, ...monty.measurements, ...lineage.measurements],
      ratios: [...quickjs.ratios, ...monty.ratios, ...lineage.ratios],
      notes: [
        "on the result's path the ledger copies what it records and queues it; hashing and writes " +
          "run within 20 ms, one transaction per batch (quickjs: a batch every 20 ms; monty's inline " +
          'runs never yield, so hand-overs of 256 to the writer thread, which commits what gathered, up to 500)',
        'whole cost: each pair is a batch through one execgate with its ledger recording and one with its ledger ' +
          'silenced (order swapped every pair), each timed to the end of its flush; the figure is the median of the ' +
          'pairs’ on − off differences, with their quartiles and mean (the mean spreads the every-8,000-records ' +
          'checkpoint); CPU is process.cpuUsage, every thread (bench/ledger-cost.ts)',
        ...lineage.notes,
      ],
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
