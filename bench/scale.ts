import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { Redis } from 'ioredis'
import type { Execgate, ExecutionRequest, PlanSpec } from '../src'
import { createTaskService, type TaskSpec } from '../src/fabric/tasks'
import { tagged, workingSubject, type Subject } from './against'
import { measureInterleaved, type BenchSection, type Measurement } from './harness'
import { redisServerInstalled, startRedisServer, type RedisServer, REDIS_INSTALL_COMMAND } from './redis-server'

/**
 * The fabric past one process (docs/scale.md reads these):
 *
 * - plan overhead on Redis vs SQLite: a 3-step chained plan (each step reads the one before, so nothing overlaps),
 *   `run → wait` in one process on each store, interleaved with the same three runs executed directly; a store's
 *   overhead is its plan's p50 minus the direct runs' p50 (target: Redis ≤ 2× SQLite's); with `--against <ref>` both
 *   builds' gates (each on its own store) in the same interleaved series, so a busy machine's noise falls on both;
 * - tasks/s with 1 and 2 `execgate worker` processes (the built CLI) on one redis-server: a backlog of trivial quickjs
 *   tasks submitted from this process (which runs none) in batches of 500 and drained by the workers, timed from the
 *   first submission to the last completion, read from Redis.
 */

const PLAN: PlanSpec = {
  steps: [
    { id: 'extract', language: 'javascript', code: '[3, 1, 4, 1, 5, 9, 2, 6]' },
    {
      id: 'total',
      language: 'javascript',
      code: 'JSON.parse(await read_file("steps/extract/value.json")).reduce((a, b) => a + b, 0)',
      dependsOn: ['extract'],
    },
    {
      id: 'report',
      language: 'javascript',
      code: '`total: ${JSON.parse(await read_file("steps/total/value.json"))}`',
      dependsOn: ['total'],
    },
  ],
}

const DIRECT: ExecutionRequest[] = [
  { language: 'javascript', code: PLAN.steps[0]!.code },
  { language: 'javascript', code: PLAN.steps[1]!.code, files: [{ path: 'steps/extract/value.json', content: '[3,1,4,1,5,9,2,6]' }] },
  { language: 'javascript', code: PLAN.steps[2]!.code, files: [{ path: 'steps/total/value.json', content: '31' }] },
]

const BIN = path.join(__dirname, '..', '..', 'bin', 'execgate.js')

/** The plan overhead rows measure every build given (`--against <ref>`), interleaved; the drain rows this tree only. */
export const compares = true

export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  if (!redisServerInstalled())
    return { title: 'scale (Redis)', measurements: [], ratios: [], notes: [`redis-server is not installed: run ${REDIS_INSTALL_COMMAND}`] }
  const redis = await startRedisServer()
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-scale-'))
  try {
    const plans = await planOverhead(redis, dataDir, subjects)
    // EXECGATE_BENCH_SCALE_BACKLOG=0 measures the plans alone (the drains take a minute or more on a busy machine).
    const backlog = Number(process.env.EXECGATE_BENCH_SCALE_BACKLOG ?? 4000)
    const drains = backlog > 0 ? [await drain(redis, dataDir, 1, backlog), await drain(redis, dataDir, 2, backlog)] : []
    const [one, two] = drains
    return {
      title: 'scale: plans on Redis vs SQLite, tasks/s with 1 and 2 workers (quickjs)',
      measurements: [...plans.measurements, ...drains.map((row) => row.measurement)],
      ratios: [
        ...plans.ratios,
        ...(one && two
          ? [
              `tasks/s: 1 worker ${one.measurement.opsPerSec.toFixed(0)}, 2 workers ` +
                `${two.measurement.opsPerSec.toFixed(0)} (2 workers / 1 = ` +
                `${(two.measurement.opsPerSec / one.measurement.opsPerSec).toFixed(2)}×, on ` +
                `${os.cpus().length} cores)`,
            ]
          : []),
        ...drains.map(
          ({ redis: cost }, index) =>
            `Redis per task (${index + 1} worker${index ? 's' : ''}): ` +
            `${cost.commandsPerTask.toFixed(1)} commands, ${cost.cpuMicrosPerTask.toFixed(0)} µs of ` +
            `redis-server CPU: one Redis core saturates at ≈ ` +
            `${(1e6 / cost.cpuMicrosPerTask).toFixed(0)} tasks/s`,
        ),
      ],
      notes: [
        backlog > 0
          ? `each worker: fabric.concurrency 4, quickjs with its default 2 worker threads; the ` +
            `submitter is this process (it runs no task); ${backlog} tasks per row`
          : 'tasks/s not measured (EXECGATE_BENCH_SCALE_BACKLOG=0)',
      ],
    }
  } finally {
    await redis.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

/** redis-server's own counters: commands processed and CPU seconds used (user + system), from INFO. */
async function redisCounters(redis: Redis): Promise<{ commands: number; cpuMicros: number }> {
  const info = await redis.info()
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN)
  return { commands: field('total_commands_processed'), cpuMicros: (field('used_cpu_user') + field('used_cpu_sys')) * 1e6 }
}

/** Each build's two gates: one on SQLite, one on Redis (its own prefix). */
interface PlanGates {
  subject: Subject
  sqlite: Execgate
  redis: Execgate
}

async function planOverhead(
  redis: RedisServer,
  dataDir: string,
  subjects: readonly Subject[],
): Promise<Pick<BenchSection, 'measurements' | 'ratios'>> {
  const open = (subject: Subject, fabric: Record<string, unknown>) =>
    subject.lib.createExecgate({
      overrides: {
        execution: { enabled: ['quickjs'], adapter: 'quickjs' },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric,
      },
    })
  const opened: Execgate[] = []
  const gates: PlanGates[] = []
  try {
    for (const subject of subjects) {
      const at = path.join(dataDir, subject.tag)
      const sqlite = await open(subject, { dataDir: path.join(at, 'sqlite') })
      opened.push(sqlite)
      const onRedis = await open(subject, {
        dataDir: path.join(at, 'redis'),
        store: 'redis',
        redisUrl: redis.url,
        redisPrefix: `benchplans${subject.tag}`,
      })
      opened.push(onRedis)
      gates.push({ subject, sqlite, redis: onRedis })
    }
    await Promise.all(opened.map((gate) => gate.plans.start()))
    const plan = (gate: Execgate) => async () => {
      const done = await gate.plans.wait((await gate.plans.run(PLAN)).id)
      if (done.state !== 'COMPLETED') throw new Error(`the plan ended ${done.state}: ${done.reason}`)
    }
    const direct = gates[gates.length - 1]!.sqlite
    const [steps, ...plans] = await measureInterleaved(
      [
        {
          name: "the steps' own runs, one after another (3 × execute on quickjs)",
          fn: async () => {
            for (const request of DIRECT) {
              const result = await direct.execute(request, { workspaceAccess: 'sandboxed' })
              if (result.status !== 'ok') throw new Error(`execute answered ${result.status}: ${result.message}`)
            }
          },
        },
        ...gates.flatMap(({ subject, sqlite, redis: onRedis }) => [
          { name: tagged(subjects, subject, 'plan of 3 chained steps: run → wait (SQLite store)'), fn: plan(sqlite) },
          { name: tagged(subjects, subject, 'plan of 3 chained steps: run → wait (Redis store, steps through BullMQ)'), fn: plan(onRedis) },
        ]),
      ],
      { iterations: Number(process.env.EXECGATE_BENCH_PLAN_ITERATIONS ?? 200), batch: 20, warmup: 10 },
    )
    const ratios: string[] = []
    const redisOverheads: number[] = []
    for (const [index, { subject, redis: onRedis }] of gates.entries()) {
      const sqliteOverhead = plans[2 * index]!.p50Ms - steps!.p50Ms
      const redisOverhead = plans[2 * index + 1]!.p50Ms - steps!.p50Ms
      redisOverheads.push(redisOverhead)
      // What one plan costs Redis and this process, from their counters around 50 plans run one after another.
      const peek = new Redis(redis.url)
      const before = await redisCounters(peek)
      const cpu = process.cpuUsage()
      for (let i = 0; i < 50; i++) await plan(onRedis)()
      const used = process.cpuUsage(cpu)
      const after = await redisCounters(peek)
      peek.disconnect()
      ratios.push(
        `${tagged(subjects, subject, "plan overhead p50 (plan − its steps' runs)")}: SQLite ${sqliteOverhead.toFixed(2)} ms, ` +
          `Redis ${redisOverhead.toFixed(2)} ms: Redis/SQLite = ${(redisOverhead / sqliteOverhead).toFixed(2)}× (target ≤ 2×)`,
        `${tagged(subjects, subject, 'plan end to end p50')}: Redis/SQLite = ` +
          `${(plans[2 * index + 1]!.p50Ms / plans[2 * index]!.p50Ms).toFixed(2)}×`,
        `${tagged(subjects, subject, 'Redis per plan of 3 steps')}: ${((after.commands - before.commands) / 50).toFixed(0)} commands, ` +
          `${((after.cpuMicros - before.cpuMicros) / 50).toFixed(0)} µs of redis-server CPU, ` +
          `${((used.user + used.system) / 50 / 1000).toFixed(2)} ms of this process's CPU (the steps' runs included)`,
      )
    }
    if (redisOverheads.length === 2)
      ratios.push(
        `Redis plan overhead work/base = ${(redisOverheads[1]! / redisOverheads[0]!).toFixed(2)}× ` +
          `(${redisOverheads[1]!.toFixed(2)} vs ${redisOverheads[0]!.toFixed(2)} ms)`,
      )
    return { measurements: [steps!, ...plans], ratios }
  } finally {
    for (const gate of opened) await gate.dispose()
  }
}

/** Starts `workers` worker processes on a fresh prefix, submits `backlog` tasks and times them until all completed. */
async function drain(
  redis: RedisServer,
  dataDir: string,
  workers: number,
  backlog: number,
): Promise<{ measurement: Measurement; redis: { commandsPerTask: number; cpuMicrosPerTask: number } }> {
  const prefix = `benchdrain${workers}`
  const env = {
    ...process.env,
    EXECGATE_LOG_LEVEL: 'silent',
    EXECGATE_READINESS_ENABLED: 'false',
    EXECGATE_EXECUTION_ENABLED: 'quickjs',
    EXECGATE_FABRIC_STORE: 'redis',
    EXECGATE_FABRIC_REDIS_URL: redis.url,
    EXECGATE_FABRIC_REDIS_PREFIX: prefix,
    EXECGATE_FABRIC_DATA_DIR: dataDir,
  }
  const children = await Promise.all(Array.from({ length: workers }, () => startWorker(env)))
  const submitter = createTaskService({
    execute: () => Promise.reject(new Error('the bench submitter runs no task')),
    backend: { kind: 'redis', url: redis.url, prefix },
    run: false,
  })
  const peek = new Redis(redis.url)
  try {
    const task: TaskSpec = { request: { language: 'javascript', code: '1 + 1' } }
    const before = await redisCounters(peek)
    const t0 = performance.now()
    for (let submitted = 0; submitted < backlog; submitted += 500)
      await submitter.submitMany(Array.from({ length: Math.min(500, backlog - submitted) }, () => task))
    while ((await peek.scard(`${prefix}:tasks:state:COMPLETED`)) < backlog) await new Promise((resolve) => setTimeout(resolve, 20))
    const ms = performance.now() - t0
    const after = await redisCounters(peek)
    const measurement: Measurement = {
      name:
        `${backlog} trivial tasks submitted and drained by ${workers} execgate worker ` +
        `process${workers > 1 ? 'es' : ''} (Redis + BullMQ)`,
      iterations: backlog,
      p50Ms: NaN,
      p95Ms: NaN,
      meanMs: ms / backlog,
      opsPerSec: (backlog / ms) * 1000,
    }
    // The peek loop's own SCARDs are counted too: one per 20 ms, a few hundred against tens of thousands.
    return {
      measurement,
      redis: {
        commandsPerTask: (after.commands - before.commands) / backlog,
        cpuMicrosPerTask: (after.cpuMicros - before.cpuMicros) / backlog,
      },
    }
  } finally {
    peek.disconnect()
    await submitter.close()
    await Promise.all(children.map(stop))
  }
}

function startWorker(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, [BIN, 'worker'], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let text = ''
  return new Promise((resolve, reject) => {
    child.stderr!.on('data', (data: Buffer) => {
      text += data.toString()
      if (/running tasks/.test(text)) resolve(child)
    })
    child.once('exit', (code) => reject(new Error(`execgate worker exited ${code}: ${text}`)))
  })
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
}
