import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ContainerModule } from 'inversify'
import { Redis } from 'ioredis'
import { createExecgate, type Execgate, type PlanEvent } from '../../../src'
import * as tokens from '../../../src/app/tokens'
import { RedisPlanStore, type PlanStore } from '../../../src/fabric/plans'
import { ownerProcess } from '../../../src/fabric/owner-id'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'

/**
 * One driver of plans on a shared Redis (docs/plans.md#many-nodes): a serve-like execgate whose plan store is counted
 * and a worker on one redis-server, while the driver lease is held for another node. The engine neither sweeps the
 * active plans nor advances them, though its event stream carries the steps' transitions the worker announces; once
 * the lease is free it takes it and ends the plan. (The other node is the lease held in Redis; two execgates of one
 * process, each with its own owner id, are test/fabric/owner-ids.test.ts.)
 */

let redis: RedisServer
let root: string
const opened: Execgate[] = []
const PREFIX = `driver-${process.pid}`

/** A real Redis plan store whose `active()` reads are counted. */
function countedStore(): { store: PlanStore; activeReads: () => number } {
  let reads = 0
  const store = new RedisPlanStore({ redis: new Redis(redis.url), prefix: `${PREFIX}:plans`, ownsConnection: true })
  const active = store.active.bind(store)
  store.active = () => ((reads += 1), active())
  return { store, activeReads: () => reads }
}

async function open(role: 'server' | 'library', store?: PlanStore): Promise<Execgate> {
  const execgate = await createExecgate({
    role,
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { store: 'redis', redisUrl: redis.url, redisPrefix: PREFIX, dataDir: root, serveRunsTasks: false, leaseMs: 3000 },
    },
    ...(store
      ? { modules: [new ContainerModule(({ rebindSync }) => void rebindSync<PlanStore>(tokens.PlanStore).toConstantValue(store))] }
      : {}),
  })
  opened.push(execgate)
  return execgate
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-plan-driver-'))
  redis = await startRedisServer()
})

afterAll(async () => {
  for (const execgate of opened.reverse()) await execgate.dispose()
  await redis?.stop()
  fs.rmSync(root, { recursive: true, force: true })
})

test('an engine that does not hold the driver lease never sweeps or advances plans; it takes over when the lease is free', async () => {
  const peek = new Redis(redis.url)
  // Another node drives (its lease held here for it): this process's engine must leave the plans to it.
  await peek.set(`${PREFIX}:plans:driver`, 'another-host:1', 'PX', 60_000)
  const counted = countedStore()
  const node = await open('server', counted.store)
  await node.plans.start()
  const worker = await open('library')
  await worker.tasks.start()
  try {
    const plan = await node.plans.run({
      steps: [
        { id: 'a', language: 'javascript', code: '20' },
        { id: 'b', language: 'javascript', code: 'JSON.parse(await read_file("steps/a/value.json")) + 1', dependsOn: ['a'] },
      ],
    })
    const events: PlanEvent[] = []
    const stream = (async () => {
      for await (const event of node.plans.events(plan.id)) if (event.type !== 'output') events.push(event)
    })()
    // The steps run on the worker; their transitions are pushed to this node's stream, but nobody ends the plan.
    const stepsDone = async () => (await node.plans.get(plan.id))!.steps.every((step) => step.state === 'COMPLETED')
    for (let waited = 0; !(await stepsDone()); waited += 100) {
      if (waited > 30_000) throw new Error(`steps not done: ${JSON.stringify(await node.plans.get(plan.id))}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await new Promise((resolve) => setTimeout(resolve, 2500))
    expect((await node.plans.get(plan.id))!.state).toBe('RUNNING')
    expect(counted.activeReads()).toBe(0)
    for (const step of ['a', 'b'])
      expect(
        events.filter((event) => event.type === 'step' && event.stepId === step).map((event) => (event.type === 'step' ? event.to : '')),
      ).toEqual(expect.arrayContaining(['RUNNING', 'COMPLETED']))

    // The other driver goes (a clean stop gives the lease back): this engine drives from its next tick and ends the plan.
    await peek.del(`${PREFIX}:plans:driver`)
    await stream
    expect(events.at(-1)).toMatchObject({ type: 'plan', from: 'RUNNING', to: 'COMPLETED' })
    expect((await node.plans.get(plan.id))!.steps.map((step) => step.result?.value)).toEqual([20, 21])
    expect(counted.activeReads()).toBeGreaterThan(0)
    expect(ownerProcess((await peek.get(`${PREFIX}:plans:driver`))!).pid).toBe(process.pid)
  } finally {
    peek.disconnect()
  }
}, 60_000)
