import fs from 'node:fs'
import { performance } from 'node:perf_hooks'
import type { Execgate, ExecutionRequest } from '../src'

/**
 * The ledger's whole cost a run, measured so that a shared machine moves it little (bench/ledger.ts prints it).
 *
 * One **pair** is a batch of `runs` sequential runs through one execgate with its ledger recording, and the same
 * through the **same execgate** with its ledger's listener silenced (`silence`: the runs are not recorded), back to
 * back, their order swapped every pair (recording first, then silenced first) so a drift in the machine's speed falls
 * on both sides alike. One execgate, not one with the ledger and one without: two execgates' quickjs workers differed
 * from batch to batch by ±30 µs a run with no ledger on either (an A/A test, 1,000-run batches), one execgate's by
 * ±10 µs, which hid the ledger's ~17 µs in noise (medians of 3.5 to 14.5 µs from the same code, 2026-11-28). A batch
 * is timed from its first run to the end of `ledger.flush()` (every record of the batch committed: the writer
 * thread's hashing, blob writes and SQLite transactions included): its **wall** figure. Its **CPU** figure is
 * `process.cpuUsage()` (every thread of the process: the request thread, the ledger's writer thread, V8's helper
 * threads collecting either's garbage, an engine's workers) over the same span plus `tailMs` idle after it (0 by
 * default: batches follow each other closer than the writer's 250 ms idle, so its WAL checkpoint runs every 8,000
 * records inside a batch's appends, as under steady load; with a tail it runs, and is counted, in the batch it belongs
 * to, and the silenced side idles as long). The request thread's own CPU over the loop and flush (Linux's /proc
 * schedstat) is printed too, to tell its share from the writer's. No collection is forced between batches: a forced
 * full GC made the next batch of monty runs ~3× slower (V8 shrinks the young generation and drops feedback), so each
 * batch is long enough (tens of ms) to pay its own scavenges. The figures printed are the **median of the pairs'
 * differences** (on − off, per run) with their quartiles, and their mean: a pair disturbed by another process moves
 * one difference, not the median; the mean spreads rarer costs (a checkpoint, a major GC) over every run as the
 * ledger's users pay them.
 */

/** Per run, in µs. */
interface Batch {
  wall: number
  cpu: number
  /** The request thread's own CPU (NaN where /proc does not say). */
  thread: number
}

/** A cell nothing ever notifies: waiting on it is a short sleep (threadCpu). */
const neverNotified = new Int32Array(new SharedArrayBuffer(4))

/**
 * This (the request) thread's CPU time in µs, from Linux's schedstat (the first field, ns on the CPU); NaN elsewhere.
 * A running thread's figure there is brought up to date only at a scheduler tick or a switch, so read at once it lagged
 * by up to a tick: measured against `process.cpuUsage()` around 3 ms of work, off by −2.8 to +1.0 ms, which over a
 * 1,000-run batch is ±3 µs a run. A 10 µs sleep first makes the kernel account the slice that was running (within
 * ~0.1 ms in the same test).
 */
function threadCpu(): number {
  try {
    Atomics.wait(neverNotified, 0, 0, 0.01)
    return Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1000
  } catch {
    return NaN
  }
}

export interface CostFigures {
  on: number
  off: number
  median: number
  q1: number
  q3: number
  mean: number
}

export interface PairedCost {
  pairs: number
  runs: number
  /** In µs a run: each side's median, and the pairs' differences' median, quartiles (q1, q3) and mean. */
  wall: CostFigures
  cpu: CostFigures
  /** The request thread's share of `cpu` (the loop and its flush, without the tail). */
  thread: CostFigures
}

/** One build's execgate, its ledger on. */
export type CostSide = Execgate

/**
 * Stops or resumes the ledger's recording of this execgate's runs, for the bench alone: the ledger is the execution
 * service's listener, and an own `onResult` that does nothing shadows its method (deleting it brings the method back).
 * The rest of the execgate (its engine's worker, its request path, the ledger's writer thread) stays the same.
 */
function silence(execgate: Execgate, silenced: boolean): void {
  const listener = execgate.ledger as unknown as { onResult?: unknown }
  if (silenced) listener.onResult = () => undefined
  else delete listener.onResult
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function batch(execgate: Execgate, recording: boolean, request: ExecutionRequest, runs: number, tailMs: number): Promise<Batch> {
  silence(execgate, !recording)
  const writtenBefore = execgate.ledger.stats?.().written
  const cpu = process.cpuUsage()
  const thread = threadCpu()
  const started = performance.now()
  for (let i = 0; i < runs; i++) {
    const result = await execgate.execute(request)
    if (result.status !== 'ok') throw new Error(`${request.language} answered ${result.status}: ${result.message}`)
  }
  await execgate.ledger.flush()
  const wall = performance.now() - started
  const written = (execgate.ledger.stats?.().written ?? 0) - (writtenBefore ?? 0)
  // A silenced batch that was recorded would make the figure a comparison of the ledger with itself.
  if (!recording && written !== 0) throw new Error('silencing the ledger did not stop its recording')
  // A recording batch whose records were not all written (lost past the queue limit) would leave their cost out.
  if (recording && written !== runs)
    throw new Error(`the ledger wrote ${written} of the batch's ${runs} records: the figure would leave the rest out`)
  const threadUsed = threadCpu() - thread
  if (tailMs > 0) await sleep(tailMs)
  const used = process.cpuUsage(cpu)
  return { wall: (wall * 1000) / runs, cpu: (used.user + used.system) / runs, thread: threadUsed / runs }
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  const at = (sorted.length - 1) * q
  const low = Math.floor(at)
  return sorted[low]! + (sorted[Math.min(low + 1, sorted.length - 1)]! - sorted[low]!) * (at - low)
}

function summary(on: readonly number[], off: readonly number[]): CostFigures {
  const differences = on.map((value, index) => value - off[index]!)
  return {
    mean: differences.reduce((sum, value) => sum + value, 0) / differences.length,
    on: quantile(on, 0.5),
    off: quantile(off, 0.5),
    median: quantile(differences, 0.5),
    q1: quantile(differences, 0.25),
    q3: quantile(differences, 0.75),
  }
}

/**
 * The paired measure for every side (one per build under test), interleaved: each pair round measures every side's
 * pair in turn, the sides' order swapped every round too. One untimed pair per side first (JIT, the writer thread,
 * the store's files).
 */
export async function pairedCost(
  sides: readonly CostSide[],
  request: ExecutionRequest,
  options: { runs: number; pairs: number; tailMs: number },
): Promise<PairedCost[]> {
  const { runs, pairs, tailMs } = options
  const samples = sides.map(() => ({ on: [] as Batch[], off: [] as Batch[] }))
  for (const execgate of sides) {
    await batch(execgate, true, request, runs, tailMs)
    await batch(execgate, false, request, runs, tailMs)
  }
  for (let pair = 0; pair < pairs; pair++) {
    const order = sides.map((_, index) => index)
    if (pair % 2 === 1) order.reverse()
    for (const index of order) {
      const execgate = sides[index]!
      const sample = samples[index]!
      if (pair % 2 === 0) {
        sample.on.push(await batch(execgate, true, request, runs, tailMs))
        sample.off.push(await batch(execgate, false, request, runs, tailMs))
      } else {
        sample.off.push(await batch(execgate, false, request, runs, tailMs))
        sample.on.push(await batch(execgate, true, request, runs, tailMs))
      }
    }
  }
  for (const execgate of sides) silence(execgate, false)
  return samples.map(({ on, off }) => ({
    pairs,
    runs,
    wall: summary(
      on.map((b) => b.wall),
      off.map((b) => b.wall),
    ),
    cpu: summary(
      on.map((b) => b.cpu),
      off.map((b) => b.cpu),
    ),
    thread: summary(
      on.map((b) => b.thread),
      off.map((b) => b.thread),
    ),
  }))
}

/** `9.8 µs (quartiles 8.1 to 11.2, mean 10.3; on 21.0, off 11.2 µs a run)` */
export function describeCost(cost: CostFigures): string {
  const us = (value: number) => value.toFixed(1)
  return (
    `${us(cost.median)} µs (quartiles ${us(cost.q1)} to ${us(cost.q3)}, mean ${us(cost.mean)}; ` +
    `on ${us(cost.on)}, off ${us(cost.off)} µs a run)`
  )
}

/**
 * Fails a section whose execgates' ledgers lost records (past `fabric.ledger.queueLimit`): its figures "with the
 * ledger on" would leave the lost records' cost out. Answers the note the section prints.
 */
export async function ledgerKept(gates: readonly Execgate[]): Promise<string> {
  let written = 0
  for (const gate of gates) {
    await gate.ledger.flush()
    const stats = gate.ledger.stats?.()
    if (stats && stats.lost > 0)
      throw new Error(`the ledger lost ${stats.lost} records (queue limit ${stats.queueLimit}): figures with it on leave their cost out`)
    written += stats?.written ?? 0
  }
  return `ledger on: ${written} records written, none lost`
}
