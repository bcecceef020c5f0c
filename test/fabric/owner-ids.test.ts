import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { createExecgate, type Execgate } from '../../src'
import { ownerProcess } from '../../src/fabric/owner-id'
import type { TaskEvent } from '../../src/fabric/tasks'
import { startRedisServer, type RedisServer } from '../../bench/redis-server'

/**
 * Two execgates in one process on one redis-server (src/fabric/owner-id.ts): each has its own owner id, so each holds
 * its own engine lease, one stopping never gives back the other's lease or the driver lease it holds, and one
 * starting never takes the other's running task for a dead process's. (With one id per process, the second's stop
 * deleted the first's leases and the second's start settled the first's run as lost.)
 */

let redis: RedisServer
let peek: Redis
let root: string
const opened: Execgate[] = []
const PREFIX = `owners-${process.pid}`

async function open(): Promise<Execgate> {
  const execgate = await createExecgate({
    role: 'server',
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { store: 'redis', redisUrl: redis.url, redisPrefix: PREFIX, dataDir: root, leaseMs: 3000, ledger: { enabled: false } },
    },
  })
  opened.push(execgate)
  return execgate
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-owner-ids-'))
  redis = await startRedisServer()
  peek = new Redis(redis.url)
})

afterAll(async () => {
  for (const execgate of opened.reverse()) await execgate.dispose()
  peek?.disconnect()
  await redis?.stop()
  fs.rmSync(root, { recursive: true, force: true })
})

const engineOwners = async () =>
  (await peek.keys(`${PREFIX}:plans:engine:*`)).map((key) => key.slice(`${PREFIX}:plans:engine:`.length)).sort()

test('two execgates in one process: own owner ids, own leases, and neither takes the other run for a dead one', async () => {
  const first = await open()
  await first.plans.start()
  const busy = await first.tasks.submit({
    request: { language: 'javascript', code: 'const t = Date.now(); while (Date.now() - t < 1500) {}; 7' },
    retryPolicy: { maxAttempts: 3 },
  })
  for (let waited = 0; (await first.tasks.get(busy.id))!.state !== 'RUNNING'; waited += 20) {
    if (waited > 30_000) throw new Error('the task never ran')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }

  // The second starts while the first runs the task: the run is another live owner's, not a dead process's.
  const second = await open()
  await second.plans.start()
  const owners = await engineOwners()
  expect(owners).toHaveLength(2)
  expect(owners.map((owner) => ownerProcess(owner).pid)).toEqual([process.pid, process.pid])
  const driver = await peek.get(`${PREFIX}:plans:driver`)
  expect(owners).toContain(driver)
  const ran = await first.tasks.wait(busy.id, { timeoutMs: 30_000 })
  expect([ran.state, ran.attempts, ran.result?.value]).toEqual(['COMPLETED', 1, 7])
  const log = (await peek.lrange(`${PREFIX}:tasks:events:${busy.id}`, 0, -1)).map((raw) => JSON.parse(raw) as TaskEvent)
  expect(log.filter((event) => event.to === 'RUNNING')).toHaveLength(1)

  // The second (not the driver: the first took the lease first) stops: only its own lease goes.
  await second.dispose()
  expect(await engineOwners()).toEqual([driver])
  expect(await peek.get(`${PREFIX}:plans:driver`)).toBe(driver)
  const plan = await first.plans.run({
    steps: [
      { id: 'a', language: 'javascript', code: '20' },
      { id: 'b', language: 'javascript', code: 'JSON.parse(await read_file("steps/a/value.json")) + 1', dependsOn: ['a'] },
    ],
  })
  const done = await first.plans.wait(plan.id, { timeoutMs: 30_000 })
  expect([done.state, done.steps.map((step) => step.result?.value)]).toEqual(['COMPLETED', [20, 21]])

  // A third takes the driver lease once the first, its holder, stops (a clean stop gives it back at once).
  const third = await open()
  await third.plans.start()
  const [thirdOwner] = (await engineOwners()).filter((owner) => owner !== driver)
  await first.dispose()
  for (let waited = 0; (await peek.get(`${PREFIX}:plans:driver`)) !== thirdOwner; waited += 100) {
    if (waited > 30_000) throw new Error(`the third never took the driver lease: ${await peek.get(`${PREFIX}:plans:driver`)}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  expect(await engineOwners()).toEqual([thirdOwner])
}, 120_000)
