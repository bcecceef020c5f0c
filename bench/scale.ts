import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { Redis } from 'ioredis'
import type { Execgate, ExecutionRequest, PlanSpec } from '../src'
import { createTaskService, type TaskSpec } from '../src/fabric/tasks'
import { workingSubject } from './against'
import { measureInterleaved, type BenchSection, type Measurement } from './harness'
import { redisServerInstalled, startRedisServer, type RedisServer, REDIS_INSTALL_COMMAND } from './redis-server'

/**
 * The fabric past one process (docs/scale.md reads these):
 *
 * - plan overhead on Redis vs SQLite: a 3-step chained plan (each step reads the one before, so nothing overlaps),
 *   `run → wait` in one process on each store, interleaved with the same three runs executed directly; a store's
 *   overhead is its plan's p50 minus the direct runs' p50 (target: Redis ≤ 2× SQLite's);
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

export async function run(): Promise<BenchSection> {
  if (!redisServerInstalled())
    return { title: 'scale (Redis)', measurements: [], ratios: [], notes: [`redis-server is not installed: run ${REDIS_INSTALL_COMMAND}`] }
  const redis = await startRedisServer()
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-scale-'))
  try {
    const plans = await planOverhead(redis, dataDir)
    const backlog = Number(process.env.EXECGATE_BENCH_SCALE_BACKLOG ?? 4000)
    const one = await drain(redis, dataDir, 1, backlog)
    const two = await drain(redis, dataDir, 2, backlog)
    const redisCost = [one, two].map((row) => row.redis)
    return {
      title: 'scale: plans on Redis vs SQLite, tasks/s with 1 and 2 workers (quickjs)',
      measurements: [...plans.measurements, one.measurement, two.measurement],
      ratios: [
        ...plans.ratios,
        `tasks/s: 1 worker ${one.measurement.opsPerSec.toFixed(0)}, 2 workers ` +
          `${two.measurement.opsPerSec.toFixed(0)} (2 workers / 1 = ` +
          `${(two.measurement.opsPerSec / one.measurement.opsPerSec).toFixed(2)}×, on ` +
          `${os.cpus().length} cores)`,
        ...redisCost.map(
          (cost, index) =>
            `Redis per task (${index + 1} worker${index ? 's' : ''}): ` +
            `${cost.commandsPerTask.toFixed(1)} commands, ${cost.cpuMicrosPerTask.toFixed(0)} µs of ` +
            `redis-server CPU: one Redis core saturates at ≈ ` +
            `${(1e6 / cost.cpuMicrosPerTask).toFixed(0)} tasks/s`,
        ),
        `Redis per plan of 3 steps: ${plans.redisCost.commandsPerPlan.toFixed(0)} commands, ` +
          `${plans.redisCost.cpuMicrosPerPlan.toFixed(0)} µs of redis-server CPU`,
      ],
      notes: [
        `each worker: fabric.concurrency 4, quickjs with its default 2 worker threads; the ` +
          `submitter is this process (it runs no task); ${backlog} tasks per row`,
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

async function planOverhead(
  redis: RedisServer,
  dataDir: string,
): Promise<Pick<BenchSection, 'measurements' | 'ratios'> & { redisCost: { commandsPerPlan: number; cpuMicrosPerPlan: number } }> {
  const open = (fabric: Record<string, unknown>) =>
    workingSubject().lib.createExecgate({
      overrides: {
        execution: { enabled: ['quickjs'], adapter: 'quickjs' },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric,
      },
    })
  const gates: Execgate[] = []
  try {
    const sqlite = await open({ dataDir: path.join(dataDir, 'sqlite') })
    gates.push(sqlite)
    const onRedis = await open({ dataDir: path.join(dataDir, 'redis'), store: 'redis', redisUrl: redis.url, redisPrefix: 'benchplans' })
    gates.push(onRedis)
    await Promise.all(gates.map((gate) => gate.plans.start()))
    const plan = (gate: Execgate) => async () => {
      const done = await gate.plans.wait((await gate.plans.run(PLAN)).id)
      if (done.state !== 'COMPLETED') throw new Error(`the plan ended ${done.state}: ${done.reason}`)
    }
    const [direct, onSqlite, onRedisStore] = await measureInterleaved(
      [
        {
          name: "the steps' own runs, one after another (3 × execute on quickjs)",
          fn: async () => {
            for (const request of DIRECT) {
              const result = await sqlite.execute(request, { workspaceAccess: 'sandboxed' })
              if (result.status !== 'ok') throw new Error(`execute answered ${result.status}: ${result.message}`)
            }
          },
        },
        { name: 'plan of 3 chained steps: run → wait (SQLite store)', fn: plan(sqlite) },
        { name: 'plan of 3 chained steps: run → wait (Redis store, steps through BullMQ)', fn: plan(onRedis) },
      ],
      { iterations: Number(process.env.EXECGATE_BENCH_PLAN_ITERATIONS ?? 200), batch: 20, warmup: 10 },
    )
    // What one plan costs Redis, from its counters around 50 plans run one after another.
    const peek = new Redis(redis.url)
    const before = await redisCounters(peek)
    for (let i = 0; i < 50; i++) await plan(onRedis)()
    const after = await redisCounters(peek)
    peek.disconnect()
    const sqliteOverhead = onSqlite!.p50Ms - direct!.p50Ms
    const redisOverhead = onRedisStore!.p50Ms - direct!.p50Ms
    return {
      redisCost: { commandsPerPlan: (after.commands - before.commands) / 50, cpuMicrosPerPlan: (after.cpuMicros - before.cpuMicros) / 50 },
      measurements: [direct!, onSqlite!, onRedisStore!],
      ratios: [
        `plan overhead p50 (plan − its steps' runs): SQLite ${sqliteOverhead.toFixed(2)} ms, ` +
          `Redis ${redisOverhead.toFixed(2)} ms: Redis/SQLite = ` +
          `${(redisOverhead / sqliteOverhead).toFixed(2)}× (target ≤ 2×)`,
        `plan end to end p50: Redis/SQLite = ${(onRedisStore!.p50Ms / onSqlite!.p50Ms).toFixed(2)}×`,
      ],
    }
  } finally {
    for (const gate of gates) await gate.dispose()
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
