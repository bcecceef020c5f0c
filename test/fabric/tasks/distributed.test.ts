import { spawn, type ChildProcess } from 'node:child_process'
import { Redis } from 'ioredis'
import os from 'node:os'
import path from 'node:path'
import type { Task, TaskEvent } from '../../../src/fabric/tasks'
import { ownerProcess } from '../../../src/fabric/owner-id'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'
import { redisClusterEnv } from '../cluster'

/**
 * The distributed store as a deployment runs it: a real redis-server, `execgate serve` accepting tasks (running none
 * itself) and two `execgate worker` processes of the built CLI running them through BullMQ. A worker killed with
 * SIGKILL mid-task loses its lease and the task completes on the other; priority order holds across workers.
 */

const BIN = path.join(__dirname, '..', '..', '..', 'bin', 'execgate.js')
// Without redis-server the suite fails in beforeAll with the command that installs it (never skipped).
const run = describe

let redis: RedisServer
let server: ChildProcess
let baseUrl: string
const workers: ChildProcess[] = []

function env(): NodeJS.ProcessEnv {
  return redisClusterEnv(
    { redisUrl: redis.url, prefix: 'execgate', dataDir: os.tmpdir() },
    { EXECGATE_FABRIC_LEASE_MS: '1500', EXECGATE_FABRIC_CONCURRENCY: '1', EXECGATE_FABRIC_SERVE_RUNS_TASKS: 'false' },
  )
}

/** Starts the CLI with `args` and resolves once its stderr has printed a line matching `ready`. */
function start(args: string[], ready: RegExp): Promise<{ child: ChildProcess; match: RegExpMatchArray }> {
  const child = spawn(process.execPath, [BIN, ...args], { env: env(), stdio: ['ignore', 'ignore', 'pipe'] })
  return new Promise((resolve, reject) => {
    let text = ''
    const timer = setTimeout(() => reject(new Error(`execgate ${args.join(' ')} did not start: ${text}`)), 30_000)
    child.stderr!.on('data', (data: Buffer) => {
      text += data.toString()
      const match = text.match(ready)
      if (match) (clearTimeout(timer), resolve({ child, match }))
    })
    child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`execgate ${args.join(' ')} exited ${code}: ${text}`))))
  })
}

async function startWorker(): Promise<ChildProcess> {
  const { child } = await start(['worker'], /worker \d+ running tasks/)
  workers.push(child)
  return child
}

async function api<T>(method: string, url: string, body?: unknown): Promise<T> {
  const response = await fetch(`${baseUrl}${url}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`)
  return JSON.parse(text) as T
}

async function until(id: string, done: (task: Task) => boolean, timeoutMs = 20_000): Promise<Task> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const task = await api<Task>('GET', `/v1/tasks/${id}`)
    if (done(task)) return task
    if (Date.now() > deadline) throw new Error(`task ${id} is still ${task.state}: ${task.reason}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function events(id: string): Promise<TaskEvent[]> {
  const response = await fetch(`${baseUrl}/v1/tasks/${id}/events`)
  const text = await response.text()
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as TaskEvent | { chunk: string })
    .filter((item): item is TaskEvent => 'to' in item)
}

const busy = (ms: number) => `const t = Date.now(); while (Date.now() - t < ${ms}) {}; ${ms}`
const submit = (code: string, extra: Record<string, unknown> = {}) =>
  api<Task>('POST', '/v1/tasks', { request: { language: 'javascript', code, timeoutMs: 5000 }, ...extra })

run('distributed tasks: serve + two workers on Redis through BullMQ', () => {
  beforeAll(async () => {
    redis = await startRedisServer()
    const started = await start(['serve', '--port', '0'], /serving on (http:\/\/\S+)/)
    server = started.child
    baseUrl = started.match[1]!
    await Promise.all([startWorker(), startWorker()])
  }, 60_000)

  afterAll(async () => {
    for (const child of [...workers, server]) if (child && child.exitCode === null) child.kill('SIGKILL')
    await redis?.stop()
  })

  test('a task submitted to the server runs on a worker (the server runs none itself)', async () => {
    const submitted = await submit('6 * 7')
    expect(submitted.state).toBe('PENDING')
    const done = await until(submitted.id, (task) => task.state === 'COMPLETED')
    expect(done.result).toMatchObject({ status: 'ok', value: 42, adapter: 'quickjs' })
  }, 30_000)

  test('kill -9 of the worker running a task: its lease lapses and the task completes on the other worker, 0 lost', async () => {
    const submitted = await submit(busy(2500), { retryPolicy: { maxAttempts: 3 } })
    const running = await until(submitted.id, (task) => task.state === 'RUNNING')
    const { pid } = ownerProcess(running.owner!)
    const victim = workers.find((worker) => worker.pid === pid)
    expect(victim).toBeDefined()
    victim!.kill('SIGKILL')
    const done = await until(submitted.id, (task) => task.state === 'COMPLETED')
    expect(done).toMatchObject({ attempts: 2, result: { status: 'ok', value: 2500 } })
    const log = await events(submitted.id)
    expect(log.map((event) => event.reason)).toContainEqual(
      expect.stringMatching(
        new RegExp(
          `^the process running it \\(${running.owner!}\\) stopped renewing its lease \\(it ` +
            `stopped, or was too busy to renew in time\\); retry 2/3 in \\d+ ms$`,
        ),
      ),
    )
    // A fresh worker takes the dead one's place for the next test.
    workers.splice(workers.indexOf(victim!), 1)
    await startWorker()
  }, 60_000)

  test('kill -9 of the worker running a dependent it started at its dependency’s end: its lease lapses, another completes it', async () => {
    // The dependency still running when its dependent is stored: its end makes the dependent ready.
    const first = await submit(busy(500))
    const second = await submit(busy(2500), { dependencies: [first.id], retryPolicy: { maxAttempts: 3 } })
    const running = await until(second.id, (task) => task.state === 'RUNNING')
    // Started behind the end of its dependency by the worker that ran that (concurrency 1: the ending run's slot), so
    // no BullMQ job holds it: its lease is the store's own.
    const peek = new Redis(redis.url)
    try {
      expect(await peek.zrange('execgate:tasks:leases', '0', '-1')).toContain(JSON.stringify([second.id, running.owner, 1]))
    } finally {
      peek.disconnect()
    }
    const victim = workers.find((worker) => worker.pid === ownerProcess(running.owner!).pid)
    expect(victim).toBeDefined()
    victim!.kill('SIGKILL')
    const done = await until(second.id, (task) => task.state === 'COMPLETED')
    expect(done).toMatchObject({ attempts: 2, result: { status: 'ok', value: 2500 } })
    const log = await events(second.id)
    expect(log.filter((event) => event.to === 'COMPLETED')).toHaveLength(1)
    expect(log.map((event) => event.reason)).toContainEqual(
      expect.stringMatching(new RegExp(`^the process running it \\(${running.owner!}\\) stopped renewing its lease \\(it `)),
    )
    workers.splice(workers.indexOf(victim!), 1)
    await startWorker()
  }, 60_000)

  test('kill -9 of a worker with many tasks in flight: every accepted task completes exactly once', async () => {
    const accepted = await Promise.all(
      Array.from({ length: 16 }, (_, index) =>
        submit(busy(200 + index), { retryPolicy: { maxAttempts: 3 }, idempotencyKey: `worker-crash-${index}` }),
      ),
    )
    // Both workers busy and some tasks done: then one of them dies mid-task.
    let victimPid = 0
    for (const deadline = Date.now() + 30_000; !victimPid;) {
      if (Date.now() > deadline) throw new Error('the workers never ran the tasks')
      const states = await Promise.all(accepted.map((task) => api<Task>('GET', `/v1/tasks/${task.id}`)))
      const running = states.filter((task) => task.state === 'RUNNING' && task.owner)
      if (states.some((task) => task.state === 'COMPLETED') && running.length) victimPid = ownerProcess(running[0]!.owner!).pid
      else await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const victim = workers.find((worker) => worker.pid === victimPid)!
    expect(victim).toBeDefined()
    victim.kill('SIGKILL')
    workers.splice(workers.indexOf(victim), 1)
    await startWorker()
    for (const [index, task] of accepted.entries()) {
      const done = await until(task.id, (current) => ['COMPLETED', 'FAILED', 'TERMINATED'].includes(current.state), 60_000)
      // The reason and the log are in the comparison so that a task that did not complete says why.
      const why = done.state === 'COMPLETED' ? undefined : { reason: done.reason, log: await events(task.id) }
      expect({ index, state: done.state, value: done.result?.value, why }).toEqual({
        index,
        state: 'COMPLETED',
        value: 200 + index,
        why: undefined,
      })
      expect({ index, completions: (await events(task.id)).filter((event) => event.to === 'COMPLETED').length }).toEqual({
        index,
        completions: 1,
      })
    }
  }, 120_000)

  test('priority order holds across workers: with both busy, queued tasks start highest priority first', async () => {
    const blockers = await Promise.all([submit(busy(1500)), submit(busy(1500))])
    await Promise.all(blockers.map((blocker) => until(blocker.id, (task) => task.state === 'RUNNING')))
    const priorities = [1, 5, 3, 6, 2, 4]
    const queued = await Promise.all(priorities.map((priority) => submit(busy(150), { priority })))
    await Promise.all(queued.map((task) => until(task.id, (done) => done.state === 'COMPLETED')))
    const startSeq = await Promise.all(queued.map(async (task) => (await events(task.id)).find((event) => event.to === 'SPAWNING')!.seq))
    const startOrder = priorities
      .map((priority, index) => ({ priority, seq: startSeq[index]! }))
      .sort((a, b) => a.seq - b.seq)
      .map((entry) => entry.priority)
    // Two workers take two at a time, so within a pair the claims may land in either order.
    expect(new Set(startOrder.slice(0, 2))).toEqual(new Set([6, 5]))
    expect(new Set(startOrder.slice(2, 4))).toEqual(new Set([4, 3]))
    expect(new Set(startOrder.slice(4))).toEqual(new Set([2, 1]))
  }, 60_000)
})
