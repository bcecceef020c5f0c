import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { createExecgate, type Execgate } from '../../../src'
import { Queue } from 'bullmq'
import {
  BullmqDispatcher,
  RedisTaskStore,
  SqliteTaskStore,
  SQLITE_FILE_NAME,
  createTaskService,
  type TaskServiceOptions,
  type TaskStore,
} from '../../../src/fabric/tasks'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'

/**
 * A run whose hold lapsed (its lease ran out while it was too busy to renew, and another process took the task) must
 * not settle the task when its result finally arrives: the task is the new holder's. One suite for both stores, on a
 * real SQLite file and a real redis-server; the run is a real quickjs run, held back until the takeover is written.
 */
describe.each(['sqlite', 'redis'] as const)('%s store: a late result after a takeover', (storeKind) => {
  let dataDir: string
  let redis: RedisServer | undefined
  let execgate: Execgate

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-late-result-'))
    if (storeKind === 'redis') redis = await startRedisServer()
    execgate = await createExecgate({
      env: { EXECGATE_LOG_LEVEL: 'silent', EXECGATE_READINESS_ENABLED: 'false', EXECGATE_EXECUTION_ENABLED: 'quickjs' },
    })
  })

  afterAll(async () => {
    await execgate.dispose()
    await redis?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  test('settles nothing: the task stays with its new holder, whose own end then completes it once', async () => {
    let releaseRun!: () => void
    const held = new Promise<void>((resolve) => (releaseRun = resolve))
    let runStarted!: () => void
    const started = new Promise<void>((resolve) => (runStarted = resolve))
    const service = createTaskService({
      owner: 'holder-a',
      concurrency: 1,
      ...(redis ? { backend: { kind: 'redis' as const, url: redis.url, prefix: 'late', leaseMs: 60_000 } } : { dataDir }),
      execute: async (request, options) => {
        runStarted()
        await held
        return execgate.execute(request, options)
      },
    })
    const store: TaskStore = redis
      ? new RedisTaskStore({ redis: new Redis(redis.url), prefix: 'late:tasks', ownsConnection: true })
      : new SqliteTaskStore({ file: path.join(dataDir, SQLITE_FILE_NAME) })
    try {
      const task = await service.submit({ request: { language: 'javascript', code: '6 * 7' } })
      await started
      const running = await store.get(task.id)
      expect({ state: running?.state, owner: running?.owner, attempts: running?.attempts }).toEqual({
        state: 'RUNNING',
        owner: 'holder-a',
        attempts: 1,
      })

      // Another process takes the task over once A's hold has lapsed: recovery's requeue and B's claim, in one write here
      // so that A's own pump cannot claim it back in between.
      const takenOver = await store.transition(task.id, ['RUNNING'], {
        to: 'RUNNING',
        reason: 'lease lapsed; taken over by holder-b, attempt 2',
        patch: { owner: 'holder-b', attempts: 2 },
        heldBy: { owner: 'holder-a', attempt: 1 },
      })
      expect(takenOver?.task.owner).toBe('holder-b')

      releaseRun()
      // A's run ends (a real result, 42) and A tries to write its end; wait until A has no run left in flight.
      await service.close()

      const after = await store.get(task.id)
      expect({ state: after?.state, owner: after?.owner, attempts: after?.attempts, result: after?.result }).toEqual({
        state: 'RUNNING',
        owner: 'holder-b',
        attempts: 2,
        result: undefined,
      })
      // A's own holder condition no longer holds; B's does, once.
      const lateEnd = await store.transition(task.id, ['RUNNING'], {
        to: 'COMPLETED',
        reason: 'completed',
        heldBy: { owner: 'holder-a', attempt: 1 },
      })
      expect(lateEnd).toBeUndefined()
      const ownEnd = await store.transition(task.id, ['RUNNING'], {
        to: 'COMPLETED',
        reason: 'completed',
        patch: { owner: undefined },
        heldBy: { owner: 'holder-b', attempt: 2 },
      })
      expect(ownEnd?.task.state).toBe('COMPLETED')
      const log = (await store.events(task.id)).map((event) => `${event.from ?? '-'}>${event.to}`)
      expect(log.filter((step) => step.endsWith('>COMPLETED'))).toEqual(['RUNNING>COMPLETED'])
    } finally {
      releaseRun()
      await service.close().catch(() => undefined)
      await store.close()
    }
  }, 60_000)
})

/**
 * Redis only (the embedded store has no dispatcher): a second announcement of one attempt (a resume while the first was
 * still queued, two readiness writes) is taken by another process while the first one's run is in flight. That run
 * is alive and holds its lease: the second announcement must not take it for lost (settle it, retry the task, run it
 * twice); only an announcement handed back by BullMQ (its taker stopped renewing its lease) may.
 */
describe('redis store: a second announcement of a running task', () => {
  let redis: RedisServer
  let execgate: Execgate

  beforeAll(async () => {
    redis = await startRedisServer()
    execgate = await createExecgate({
      env: { EXECGATE_LOG_LEVEL: 'silent', EXECGATE_READINESS_ENABLED: 'false', EXECGATE_EXECUTION_ENABLED: 'quickjs' },
    })
  })

  afterAll(async () => {
    await execgate.dispose()
    await redis.stop()
  })

  test('leaves the run alone: the run it finds in flight completes the task, once, at attempt 1', async () => {
    let releaseRun!: () => void
    const held = new Promise<void>((resolve) => (releaseRun = resolve))
    let runStarted!: () => void
    const started = new Promise<void>((resolve) => (runStarted = resolve))
    const open = (execute: TaskServiceOptions['execute']) =>
      createTaskService({
        concurrency: 1,
        store: new RedisTaskStore({ redis: new Redis(redis.url), prefix: 'twice:tasks', ownsConnection: true }),
        dispatcher: new BullmqDispatcher({ url: redis.url, queue: 'twice', leaseMs: 60_000 }),
        execute,
      })
    const holder = open(async (request, options) => {
      runStarted()
      await held
      return execgate.execute(request, options)
    })
    const other = open((request, options) => execgate.execute(request, options))
    const announcer = new BullmqDispatcher({ url: redis.url, queue: 'twice' })
    const queue = new Queue('twice', { connection: { url: redis.url } })
    try {
      const task = await holder.submit({ request: { language: 'javascript', code: '6 * 7' } })
      await started
      // The other process runs tasks from here on; the holder's one slot is taken by the run.
      await other.start()
      // The same attempt announced again (as at its submission: attempt count 0), while the first run is held.
      await announcer.dispatch(task)
      // Taken and done with: nothing queued, only the held run's announcement still active.
      for (const until = Date.now() + 30_000; (await queue.count()) > 0 || (await queue.getActiveCount()) !== 1;) {
        if (Date.now() > until) throw new Error('the second announcement was never taken')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      releaseRun()
      const done = await holder.wait(task.id)
      const log = (await holder.scheduler.store.events(task.id)).map((event) => `${event.from ?? '-'}>${event.to}: ${event.reason}`)
      expect({ state: done.state, attempts: done.attempts, value: done.result?.value, log }).toEqual({
        state: 'COMPLETED',
        attempts: 1,
        value: 42,
        log: ['->PENDING: submitted', 'PENDING>SPAWNING: attempt 1 of 3', 'SPAWNING>RUNNING: started', 'RUNNING>COMPLETED: completed'],
      })
    } finally {
      releaseRun()
      await holder.close().catch(() => undefined)
      await other.close().catch(() => undefined)
      await announcer.close()
      await queue.close()
    }
  }, 60_000)
})
