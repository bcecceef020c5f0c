import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ContainerModule } from 'inversify'
import { Redis } from 'ioredis'
import { createExecgate, type Execgate } from '../../../src'
import * as tokens from '../../../src/app/tokens'
import { REDIS_DRIVER } from '../../../src/fabric/drivers/redis'
import { RedisPlanStore, type NewStepEvent, type Plan, type PlanStore } from '../../../src/fabric/plans'
import type { PlanChangeKind } from '../../../src/fabric/plans/plan-store'
import type { TaskState, TaskStore } from '../../../src/fabric/tasks'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'
import { storedPlan } from '../stored-records'

/**
 * A plan's end on Redis (issue 27): its steps' last transitions and its own end are one script
 * (RedisPlanStore.mirrorAndUpdate), a round trip fewer than a mirror then an update. The step events are copied
 * whether the compare-and-set lands or not, as a mirror alone would, and before the plan's own events; a copy made
 * before is not made twice. Real redis-server on loopback; the engine's use of it through a real execgate.
 */

let redis: RedisServer
let root: string
const opened: Execgate[] = []

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-plan-end-'))
  redis = await startRedisServer()
}, 60_000)

afterAll(async () => {
  for (const execgate of opened.reverse()) await execgate.dispose()
  await redis?.stop()
  fs.rmSync(root, { recursive: true, force: true })
})

const at = new Date().toISOString()
const planOf = (id: string) => storedPlan(id, at)

function stepEvent(taskId: string, taskSeq: number, to: TaskState): NewStepEvent {
  const stepId = `step-${taskId}`
  return { type: 'step', at, version: 1, stepId, taskId, from: 'RUNNING', to, reason: to.toLowerCase(), attempt: 1, taskSeq }
}

/** Resolves once `count` subscribers listen on the channel (a watch subscribes in the background). */
async function subscribed(peek: Redis, channel: string, count: number): Promise<void> {
  for (let waited = 0; ; waited += 20) {
    const [, listening] = (await peek.call('PUBSUB', 'NUMSUB', channel)) as [string, number]
    if (Number(listening) >= count) return
    if (waited > 10_000) throw new Error(`no subscriber on ${channel}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('copies the steps not copied yet, then writes the plan, in one script; a lost write keeps the copies', async () => {
  const prefix = `end-${process.pid}:plans`
  const store = new RedisPlanStore({ redis: new Redis(redis.url), prefix, ownsConnection: true })
  const other = new RedisPlanStore({ redis: new Redis(redis.url), prefix, ownsConnection: true })
  const peek = new Redis(redis.url)
  try {
    await store.insert(planOf('p-1'), [{ type: 'plan', at, version: 1, from: null, to: 'RUNNING', reason: 'submitted' }])
    const heard: PlanChangeKind[] = []
    other.watch((planId, kind) => planId === 'p-1' && heard.push(kind))
    await subscribed(peek, `${prefix}:changes`, 1)
    expect((await store.mirror('p-1', [stepEvent('t-a', 5, 'RUNNING')])).map((event) => event.seq)).toEqual([2])

    const end = { type: 'plan' as const, at, version: 1, from: 'RUNNING' as const, to: 'COMPLETED' as const, reason: 'done' }
    const ended = await store.mirrorAndUpdate(
      { ...planOf('p-1'), rev: 2, state: 'COMPLETED', reason: 'done' },
      // The first was copied above: not again.
      [stepEvent('t-a', 5, 'RUNNING'), stepEvent('t-a', 7, 'COMPLETED')],
      [end],
    )
    expect(ended.mirrored.map((event) => [event.seq, event.type === 'step' && event.taskSeq])).toEqual([[3, 7]])
    expect(ended.written?.map((event) => [event.seq, event.type])).toEqual([[4, 'plan']])
    expect(await store.get('p-1')).toMatchObject({ rev: 2, state: 'COMPLETED' })
    expect(await store.active()).toEqual([])
    expect(await store.mirrored('p-1')).toEqual(new Map([['t-a', 7]]))

    // Another write got there first (rev 2 is taken): the plan stays as it is, the step's copy lands all the same.
    const lost = await store.mirrorAndUpdate(
      { ...planOf('p-1'), rev: 2, state: 'FAILED' },
      [stepEvent('t-b', 9, 'TERMINATED')],
      [{ ...end, to: 'FAILED' }],
    )
    expect(lost.written).toBeUndefined()
    expect(lost.mirrored.map((event) => event.seq)).toEqual([5])
    expect(await store.get('p-1')).toMatchObject({ rev: 2, state: 'COMPLETED' })
    const log = await store.events('p-1')
    expect(log.map((event) => [event.seq, event.type, event.type === 'plan' ? event.to : event.type === 'step' && event.taskSeq])).toEqual([
      [1, 'plan', 'RUNNING'],
      [2, 'step', 5],
      [3, 'step', 7],
      [4, 'plan', 'COMPLETED'],
      [5, 'step', 9],
    ])
    // Other nodes hear each write as what it was: the log grew (moved), the plan was written (write).
    for (let waited = 0; heard.length < 3 && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(heard).toEqual(['moved', 'write', 'moved'])
  } finally {
    peek.disconnect()
    await Promise.all([store.close(), other.close()])
  }
})

test("the engine ends a plan on Redis with its last step's transitions in the same write", async () => {
  const prefix = `engine-${process.pid}`
  const store = new RedisPlanStore({ redis: new Redis(redis.url), prefix: `${prefix}:plans`, ownsConnection: true })
  // Every write of a plan after its insert: the store's method and the state written.
  const writes: [method: string, state: string][] = []
  const update = store.update.bind(store)
  const mirrorAndUpdate = store.mirrorAndUpdate.bind(store)
  store.update = (plan, events) => (writes.push(['update', plan.state]), update(plan, events))
  store.mirrorAndUpdate = (plan, steps, events) => (writes.push(['mirrorAndUpdate', plan.state]), mirrorAndUpdate(plan, steps, events))
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { store: 'redis', redisUrl: redis.url, redisPrefix: prefix, dataDir: root, leaseMs: 3000 },
    },
    modules: [new ContainerModule(({ rebindSync }) => void rebindSync<PlanStore>(tokens.PlanStore).toConstantValue(store))],
  })
  opened.push(execgate)
  const plan = await execgate.plans.run({
    steps: [
      { id: 'a', language: 'javascript', code: '20' },
      { id: 'b', language: 'javascript', code: 'JSON.parse(await read_file("steps/a/value.json")) + 1', dependsOn: ['a'] },
    ],
  })
  const done = await execgate.plans.wait(plan.id)
  expect(done.state).toBe('COMPLETED')
  expect(done.steps.map((step) => step.result?.value)).toEqual([20, 21])
  expect(writes).toEqual([['mirrorAndUpdate', 'COMPLETED']])
  // The log holds every step transition once, each step's in order, and the last step's end right before the plan's.
  const log = await store.events(plan.id)
  expect(log.map((event) => event.seq)).toEqual(log.map((_, index) => index + 1))
  for (const id of ['a', 'b'])
    expect(log.flatMap((event) => (event.type === 'step' && event.stepId === id ? [event.to] : []))).toEqual([
      'PENDING',
      'SPAWNING',
      'RUNNING',
      'COMPLETED',
    ])
  const last = log.slice(-2).map((event) => (event.type === 'step' ? `${event.stepId}:${event.to}` : event.type === 'plan' && event.to))
  expect(last).toEqual(['b:COMPLETED', 'COMPLETED'])
}, 60_000)

test('a plan whose insert fails has the steps sent behind it cancelled: none runs for a plan not stored', async () => {
  const prefix = `unstored-${process.pid}`
  let refused: Plan | undefined
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { store: 'redis', redisUrl: redis.url, redisPrefix: prefix, dataDir: root, leaseMs: 3000 },
    },
    modules: [
      new ContainerModule(({ rebindSync }) => {
        // The driver's store, on the task store's connection, whose insert is refused as Redis would refuse it.
        rebindSync<PlanStore>(tokens.PlanStore)
          .toDynamicValue((context) => {
            const settings = { dataDir: root, redisUrl: redis.url, redisPrefix: prefix, leaseMs: 3000 }
            const store = REDIS_DRIVER.plans(settings, context.get<TaskStore>(tokens.TaskStore))
            store.insert = (plan) => ((refused = plan), Promise.reject(new Error('OOM command not allowed')))
            return store
          })
          .inSingletonScope()
      }),
    ],
  })
  opened.push(execgate)
  await expect(
    execgate.plans.run({
      steps: [
        // Long enough (seconds) that the cancel finds it running, bounded whatever the sandbox's clock says.
        { id: 'a', language: 'javascript', code: 'let s = 0; for (let i = 0; i < 3e7; i++) s += i % 7; s' },
        { id: 'b', language: 'javascript', code: '2', dependsOn: ['a'] },
      ],
    }),
  ).rejects.toThrow('OOM')
  const ids = refused!.versions[0]!.steps.map((step) => step.taskId)
  const tasks = await execgate.tasks.scheduler.store.getMany(ids)
  // Sent behind the insert before its refusal was heard, then ended: none completes.
  expect(tasks.map((task) => task.state)).toEqual(['TERMINATED', 'TERMINATED'])
  const settled = await Promise.all(ids.map((id) => execgate.tasks.scheduler.wait(id, 10_000)))
  expect(settled.map((task) => task?.state)).toEqual(['TERMINATED', 'TERMINATED'])
}, 60_000)
