import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import type { Execgate } from '../src'
import type { TaskSpec } from '../src/fabric/tasks'
import { tagged, workingSubject, type Subject } from './against'
import { measure, measureInterleaved, percentile, type BenchSection, type Measurement } from './harness'
import { redisServerInstalled, startRedisServer } from './redis-server'

export const compares = true

/**
 * Durable tasks on both stores, trivial quickjs tasks: the embedded SQLite store (a file in a temp dir, WAL), and the
 * distributed one (a redis-server this bench starts on a free loopback port; tasks dispatched through BullMQ to this
 * same process, so the figures are the store's and the queue's cost, not a network's):
 * - a direct execute against submit → wait of one task at a time (idle scheduler): the store's overhead per task;
 * - submit-to-start latency (submit called → RUNNING transition) with idle slots;
 * - throughput end to end: a backlog submitted in batches and drained, with the heap sampled while it drains.
 */

const TRIVIAL: TaskSpec = { request: { language: 'javascript', code: '1+1' } }

function series(name: string, samples: number[], totalMs: number): Measurement {
  const sorted = [...samples].sort((a, b) => a - b)
  return {
    name,
    iterations: samples.length,
    p50Ms: percentile(sorted, 50),
    p95Ms: percentile(sorted, 95),
    meanMs: totalMs / samples.length,
    opsPerSec: (samples.length / totalMs) * 1000,
  }
}

/**
 * Each subject's task overhead on SQLite: a direct execute and a task's submit → wait, the four series interleaved,
 * so the difference of two p50s is the store's cost per task with the machine's noise on both alike.
 */
async function overheadCompared(subjects: readonly Subject[]): Promise<BenchSection> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-tasks-'))
  const gates: Execgate[] = []
  try {
    for (const subject of subjects) {
      const gate = await subject.lib.createExecgate({
        overrides: {
          execution: { enabled: ['quickjs'], adapter: 'quickjs' },
          readiness: { enabled: false },
          log: { level: 'silent' },
          fabric: { dataDir: path.join(dataDir, subject.tag) },
        },
      })
      await gate.tasks.start()
      gates.push(gate)
    }
    const measured = await measureInterleaved(
      subjects.flatMap((subject, index) => [
        {
          name: tagged(subjects, subject, 'direct execute (ExecutionService → quickjs): 1+1'),
          fn: async () => {
            const result = await gates[index]!.execute(TRIVIAL.request)
            if (result.status !== 'ok') throw new Error(`execute answered ${result.status}`)
          },
        },
        {
          name: tagged(subjects, subject, 'task: submit → wait, one at a time (SQLite store)'),
          fn: async () => {
            const task = await gates[index]!.tasks.submit(TRIVIAL)
            const done = await gates[index]!.tasks.wait(task.id)
            if (done.state !== 'COMPLETED') throw new Error(`task ended ${done.state}: ${done.reason}`)
          },
        },
      ]),
      { iterations: 2000, batch: 100, warmup: 100 },
    )
    return {
      title: 'tasks: overhead per task on the SQLite store, compared',
      measurements: measured,
      ratios: subjects.map((subject, index) =>
        tagged(
          subjects,
          subject,
          `SQLite store: overhead per task p50 = ` +
            `${(measured[index * 2 + 1]!.p50Ms - measured[index * 2]!.p50Ms).toFixed(3)} ms (target ≤ ` +
            `0.3 ms)`,
        ),
      ),
    }
  } finally {
    for (const gate of gates) await gate.dispose()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  if (subjects.length > 1) return overheadCompared(subjects)
  // The target's figure is the interleaved one, as under --against: direct runs and tasks in alternating batches of
  // 100. runOn's series run one after the other (2,000 each), so a drift of the machine between them falls on one
  // side only; they stay for submit-to-start, which pairs each submit with its RUNNING.
  const overhead = await overheadCompared(subjects)
  const sequential = await runOn('sqlite')
  const sqlite: BenchSection = {
    ...sequential,
    measurements: [...overhead.measurements, ...sequential.measurements.slice(2)],
    ratios: [...overhead.ratios, ...sequential.ratios.slice(1)],
  }
  const redis = redisServerInstalled() ? await startRedisServer() : undefined
  if (!redis)
    return {
      ...sqlite,
      notes: [...sqlite.notes!, 'redis-server is not installed (scripts/setup/redis.sh): the redis store was not measured'],
    }
  try {
    const distributed = await runOn('redis', redis.url)
    return {
      title: 'tasks (embedded SQLite store, and Redis + BullMQ; quickjs)',
      measurements: [...sqlite.measurements, ...distributed.measurements.slice(1)],
      ratios: [...sqlite.ratios!, ...distributed.ratios!],
      notes: [...sqlite.notes!, ...distributed.notes!],
    }
  } finally {
    await redis.stop()
  }
}

async function runOn(store: 'sqlite' | 'redis', redisUrl?: string): Promise<BenchSection> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-tasks-'))
  const backlog = Number(process.env.EXECGATE_BENCH_TASK_BACKLOG ?? 10_000)
  const fabric = store === 'redis' ? { dataDir, store, redisUrl: redisUrl!, redisPrefix: `bench${Date.now()}` } : { dataDir }
  const label = store === 'redis' ? 'Redis + BullMQ store' : 'SQLite store'
  const execgate = await workingSubject().lib.createExecgate({
    overrides: { execution: { enabled: ['quickjs'], adapter: 'quickjs' }, readiness: { enabled: false }, log: { level: 'silent' }, fabric },
  })
  try {
    const tasks = execgate.tasks
    await tasks.start()
    const direct = await measure(
      'direct execute (ExecutionService → quickjs): 1+1',
      async () => {
        const result = await execgate.execute(TRIVIAL.request)
        if (result.status !== 'ok') throw new Error(`execute answered ${result.status}`)
      },
      { iterations: 2000 },
    )

    // The RUNNING time is kept per task and paired with its submit afterwards: with idle slots a submit inserts and
    // starts the task in one store call, so RUNNING is announced before submit() answers with the task's id (pairing
    // in the listener found no submit yet and left the series empty, which crashed the report).
    const submittedAt = new Map<string, number>()
    const runningAt = new Map<string, number>()
    const stopListening = tasks.scheduler.onTransition((event) => {
      if (event.to === 'RUNNING' && !runningAt.has(event.taskId)) runningAt.set(event.taskId, performance.now())
    })
    const oneByOne = await measure(
      `task: submit → wait, one at a time (${label})`,
      async () => {
        const t0 = performance.now()
        const task = await tasks.submit(TRIVIAL)
        submittedAt.set(task.id, t0)
        const done = await tasks.wait(task.id)
        if (done.state !== 'COMPLETED') throw new Error(`task ended ${done.state}: ${done.reason}`)
      },
      { iterations: 2000 },
    )
    stopListening()
    const startSamples: number[] = []
    for (const [taskId, t0] of submittedAt) {
      const at = runningAt.get(taskId)
      if (at !== undefined) startSamples.push(at - t0)
    }
    const submitToStart = series(
      `submit-to-start (submit called → RUNNING), idle slots (${label})`,
      startSamples,
      startSamples.reduce((a, b) => a + b, 0),
    )

    // Throughput: the whole backlog submitted in batches of 500 while the scheduler drains it.
    let completed = 0
    const heap: number[] = []
    global.gc?.()
    const heapBefore = process.memoryUsage().heapUsed
    const allDone = new Promise<void>((resolve) => {
      const stop = tasks.scheduler.onTransition((event) => {
        if (event.to !== 'COMPLETED') return
        completed++
        if (completed % 1000 === 0) heap.push(process.memoryUsage().heapUsed)
        if (completed === backlog) (stop(), resolve())
      })
    })
    const t0 = performance.now()
    for (let submitted = 0; submitted < backlog; submitted += 500) {
      await tasks.submitMany(Array.from({ length: Math.min(500, backlog - submitted) }, () => TRIVIAL))
    }
    await allDone
    const drainMs = performance.now() - t0
    const throughput: Measurement = {
      name: `throughput: ${backlog} trivial tasks submitted and drained (${label}, concurrency ${execgate.config.fabric.concurrency})`,
      iterations: backlog,
      p50Ms: NaN,
      p95Ms: NaN,
      meanMs: drainMs / backlog,
      opsPerSec: (backlog / drainMs) * 1000,
    }
    const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1)
    return {
      title: `tasks (${label}, quickjs)`,
      measurements: [direct, oneByOne, submitToStart, throughput],
      ratios: [
        `${label}: overhead per task p50 = ${(oneByOne.p50Ms - direct.p50Ms).toFixed(3)} ` +
          `ms${store === 'sqlite' ? ' (target ≤ 0.3 ms)' : ''}`,
        `${label}: throughput = ${throughput.opsPerSec.toFixed(0)} tasks/s${store === 'sqlite' ? ' (target ≥ 1,000)' : ''}`,
      ],
      notes: [
        `${label}: heap while draining ${backlog}: ${mib(heapBefore)} MiB before, then every ` +
          `1,000 completions: ${heap.map(mib).join(', ')} MiB`,
      ],
    }
  } finally {
    await execgate.dispose()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
