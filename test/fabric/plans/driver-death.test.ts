import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import type { PlanEvent, PlanView } from '../../../src/fabric/plans'
import { js, value } from './plan-steps'
import type { TaskEvent } from '../../../src/fabric/tasks'
import { ownerProcess } from '../../../src/fabric/owner-id'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'
import { call, kill, readEvents, redisClusterEnv, startServe, startWorker, until, type Node } from '../cluster'

/**
 * The plan driver's death (docs/plans.md#many-nodes): two `execgate serve` nodes and one `execgate worker` on one
 * redis-server, `fabric.leaseMs` a minute. The node holding `<prefix>:plans:driver` is killed with SIGKILL while a
 * plan's steps run: the other node takes the driver lease (short, renewed every tick) long before `fabric.leaseMs`
 * and ends the plan, every step run once and the plan completed once. With the driver lease as long as `leaseMs`
 * (before), the plan would wait the whole minute and the test's bound (`leaseMs`) would fail it.
 *
 * Without redis-server the suite fails in beforeAll naming scripts/setup/redis.sh (never skipped).
 */

const LEASE_MS = 60_000
const PREFIX = 'driver-death'

let redis: RedisServer
let peek: Redis
let dataDir: string
const nodes: Node[] = []

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-driver-death-'))
  redis = await startRedisServer()
  peek = new Redis(redis.url)
  const env = redisClusterEnv(
    { redisUrl: redis.url, prefix: PREFIX, dataDir },
    {
      EXECGATE_FABRIC_LEASE_MS: String(LEASE_MS),
      EXECGATE_FABRIC_SERVE_RUNS_TASKS: 'false',
      EXECGATE_FABRIC_LEDGER_ENABLED: 'false',
    },
  )
  nodes.push(...(await Promise.all([startServe(env), startServe(env), startWorker(env)])))
}, 120_000)

afterAll(async () => {
  await Promise.all(nodes.map((started) => kill(started)))
  peek?.disconnect()
  await redis?.stop()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

/** A step that keeps the plan running a while (so the driver dies mid-plan), then adds one to `from`'s value. */
const slow = (id: string, from: string) => js(id, `const t = Date.now(); while (Date.now() - t < 1500) {} ; ${value(from)} + 1`, [from])

const driverPid = async () => {
  const holder = await peek.get(`${PREFIX}:plans:driver`)
  return holder ? ownerProcess(holder).pid : undefined
}

test('kill -9 of the node driving plans: the other takes over well before fabric.leaseMs and ends the plan once', async () => {
  const serves = nodes.filter((started) => started.url)
  const holder = await until(driverPid, (pid) => pid !== undefined, 'no node took the driver lease', 30_000)
  const driver = serves.find((serve) => serve.pid === holder)
  expect(driver).toBeDefined()
  const survivor = serves.find((serve) => serve !== driver)!

  const plan = await call<PlanView>(survivor, 'POST', '/v1/plans', {
    steps: [js('a', '20'), slow('b', 'a'), slow('c', 'b')],
  })
  await until(
    () => call<PlanView>(survivor, 'GET', `/v1/plans/${plan.id}`),
    (view) => view.steps.find((step) => step.id === 'b')!.state === 'RUNNING',
    'step b never ran',
  )
  const killedAt = Date.now()
  await kill(driver!)
  expect((await call<PlanView>(survivor, 'GET', `/v1/plans/${plan.id}`)).state).toBe('RUNNING')

  await until(driverPid, (pid) => pid === survivor.pid, `the survivor never took the driver lease in ${LEASE_MS} ms`, LEASE_MS)
  const takeoverMs = Date.now() - killedAt
  const done = await until(
    () => call<PlanView>(survivor, 'GET', `/v1/plans/${plan.id}`),
    (view) => view.state === 'COMPLETED' || view.state === 'FAILED',
    'the plan never ended',
    LEASE_MS,
  )
  // Well before fabric.leaseMs: the driver lease is the tick's, not the revision's (the old lease made this >= 60 s).
  const endedMs = Date.now() - killedAt
  expect(endedMs).toBeLessThan(LEASE_MS)
  if (process.env.EXECGATE_TEST_FIGURES) console.info(`driver takeover ${takeoverMs} ms, plan ended ${endedMs} ms after the kill`)
  expect(done.state).toBe('COMPLETED')
  expect(done.steps.map((step) => [step.id, step.result?.value, step.attempts])).toEqual([
    ['a', 20, 1],
    ['b', 21, 1],
    ['c', 22, 1],
  ])
  // Exactly once: each step's task ran and completed once; the plan's log ends it once.
  for (const step of done.steps) {
    const log = (await peek.lrange(`${PREFIX}:tasks:events:${step.taskId}`, 0, -1)).map((raw) => JSON.parse(raw) as TaskEvent)
    expect([step.id, log.filter((event) => event.to === 'RUNNING').length, log.filter((event) => event.to === 'COMPLETED').length]).toEqual(
      [step.id, 1, 1],
    )
  }
  const events = await readEvents<PlanEvent>(survivor, `/v1/plans/${plan.id}/events`)
  expect(events.filter((event) => event.type === 'plan' && event.to === 'COMPLETED')).toHaveLength(1)
}, 180_000)
