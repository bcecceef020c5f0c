import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../../src'
import { Redis } from 'ioredis'
import {
  RedisTaskStore,
  SqliteTaskStore,
  SQLITE_FILE_NAME,
  createTaskService,
  type Task,
  type TaskServiceOptions,
  type TaskStore,
} from '../../../src/fabric/tasks'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'
import { storedTask } from '../stored-records'

/**
 * Durable tasks end to end, one suite for both stores: the embedded one (a real SQLite file in a temp dir) and the
 * distributed one (a real redis-server on a loopback port, tasks dispatched through BullMQ); real runs on quickjs and
 * monty. scripts/setup/redis.sh installs redis-server; without it the Redis half fails, naming that script.
 */

// Both stores always: without redis-server the Redis half fails with the command that installs it (never skipped).
const stores = ['sqlite', 'redis'] as const

describe.each(stores)('%s store', (storeKind) => {
  let dataDir: string
  let execgate: Execgate
  let redis: RedisServer | undefined
  let prefixes = 0
  /** Where a task service of this suite's store keeps tasks: a fresh key prefix on the same Redis for each one. */
  const backendFor = (): Pick<TaskServiceOptions, 'backend' | 'dataDir'> =>
    storeKind === 'redis' ? { backend: { kind: 'redis', url: redis!.url, prefix: `t${++prefixes}`, leaseMs: 2000 } } : { dataDir }
  /** A second connection to the store the suite's execgate uses. */
  const secondConnection = (): TaskStore =>
    storeKind === 'redis'
      ? new RedisTaskStore({ redis: new Redis(redis!.url), prefix: 'execgate:tasks', ownsConnection: true })
      : new SqliteTaskStore({ file: path.join(dataDir, SQLITE_FILE_NAME) })

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-tasks-'))
    if (storeKind === 'redis') redis = await startRedisServer()
    execgate = await createExecgate({
      env: {
        ...(redis ? { EXECGATE_FABRIC_STORE: 'redis', EXECGATE_FABRIC_REDIS_URL: redis.url } : {}),
        EXECGATE_LOG_LEVEL: 'silent',
        EXECGATE_READINESS_ENABLED: 'false',
        EXECGATE_EXECUTION_ENABLED: 'quickjs,monty',
        EXECGATE_FABRIC_DATA_DIR: dataDir,
        EXECGATE_FABRIC_CONCURRENCY: '2',
        // Dependents read their dependencies' outputs from the workspace.
        EXECGATE_SECURITY_DEFAULT_POLICY_FILESYSTEM: 'sandboxed',
      },
    })
    // The engines' cold start (seconds on a busy machine) is not what these tests measure.
    await execgate.execute({ language: 'javascript', code: '1' })
    await execgate.execute({ language: 'python', code: '1' })
  })

  afterAll(async () => {
    await execgate.dispose()
    await redis?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const js = (code: string, extra: Record<string, unknown> = {}) => ({ request: { language: 'javascript' as const, code }, ...extra })
  const busy = (ms: number) => `const t = Date.now(); while (Date.now() - t < ${ms}) {}; 1`

  async function log(task: Task) {
    return (await execgate.tasks.scheduler.store.events(task.id)).map((event) => `${event.from ?? '-'}>${event.to}`)
  }

  describe('lifecycle and results', () => {
    test('task runs go through admission in their lane: batch unless the task says interactive, with its priority', async () => {
      const batch = await execgate.tasks.wait((await execgate.tasks.submit(js('1', { priority: 7 }))).id)
      expect(batch.result?.admission).toMatchObject({ lane: 'batch', priority: 7 })
      const interactive = await execgate.tasks.wait((await execgate.tasks.submit(js('2', { lane: 'interactive' }))).id)
      expect(interactive.result?.admission).toMatchObject({ lane: 'interactive' })
    })

    test('a JavaScript task runs on quickjs, completes with its value, and its action log is ordered and timed', async () => {
      const submitted = await execgate.tasks.submit(js('1 + 2', { intentId: 'intent-1' }))
      expect(submitted.state).toBe('PENDING')
      const done = await execgate.tasks.wait(submitted.id)
      expect(done.state).toBe('COMPLETED')
      expect(done.result?.value).toBe(3)
      expect(done.result?.adapter).toBe('quickjs')
      const events = await execgate.tasks.scheduler.store.events(done.id)
      expect(events.map((event) => event.to)).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'COMPLETED'])
      expect(events.every((event) => !Number.isNaN(Date.parse(event.at)) && event.reason.length > 0)).toBe(true)
      expect(events.map((event) => event.seq)).toEqual([...events.map((event) => event.seq)].sort((a, b) => a - b))
      // The task is in the store, not in this process: a second connection reads it.
      const reader = secondConnection()
      try {
        expect((await reader.get(done.id))?.state).toBe('COMPLETED')
      } finally {
        await reader.close()
      }
    })

    test('a Python task runs on monty', async () => {
      const task = await execgate.tasks.submit({ request: { language: 'python', code: 'sum([1, 2, 3])' } })
      const done = await execgate.tasks.wait(task.id)
      expect(done.state).toBe('COMPLETED')
      expect(done.result?.value).toBe(6)
      expect(done.result?.adapter).toBe('monty')
    })

    test('timeout: terminated and logged, never retried', async () => {
      const task = await execgate.tasks.submit(
        js('while (true) {}', { timeoutMs: 200, retryPolicy: { retryOn: ['backend', 'error'], baseDelayMs: 10 } }),
      )
      const done = await execgate.tasks.wait(task.id)
      expect(done.state).toBe('TERMINATED')
      expect(done.reason).toMatch(/^timeout/)
      expect(done.attempts).toBe(1)
    })

    test('policy violation: terminated at once, never retried', async () => {
      const task = await execgate.tasks.submit(
        js('eval("1")', { retryPolicy: { retryOn: ['backend', 'error'], maxAttempts: 5, baseDelayMs: 10 } }),
      )
      const done = await execgate.tasks.wait(task.id)
      expect(done.state).toBe('TERMINATED')
      expect(done.reason).toMatch(/^policy_violation/)
      expect(done.attempts).toBe(1)
    })

    test('resource exhaustion: suspended, then resumed with a higher limit it completes', async () => {
      const task = await execgate.tasks.submit({
        request: { language: 'javascript', code: 'new Uint8Array(40 * 1024 * 1024).length', memoryMb: 16 },
      })
      const suspended = await execgate.tasks.wait(task.id)
      expect(suspended.state).toBe('SUSPENDED')
      expect(suspended.reason).toMatch(/^resource_exhaustion \(memory_limit\)/)
      await execgate.tasks.resume(task.id, { memoryMb: 128 })
      const done = await execgate.tasks.wait(task.id)
      expect(done.state).toBe('COMPLETED')
      expect(done.result?.value).toBe(40 * 1024 * 1024)
      expect(await log(done)).toEqual([
        '->PENDING',
        'PENDING>SPAWNING',
        'SPAWNING>RUNNING',
        'RUNNING>SUSPENDED',
        'SUSPENDED>PENDING',
        'PENDING>SPAWNING',
        'SPAWNING>RUNNING',
        'RUNNING>COMPLETED',
      ])
    })

    test("a user's exception fails at once by default; with retryOn error it is retried with backoff up to maxAttempts", async () => {
      const once = await execgate.tasks.wait((await execgate.tasks.submit(js('throw new Error("boom")'))).id)
      expect(once.state).toBe('FAILED')
      expect(once.attempts).toBe(1)
      expect(once.reason).toMatch(/boom.*not retryable/)
      const started = Date.now()
      const retried = await execgate.tasks.wait(
        (
          await execgate.tasks.submit(
            js('throw new Error("boom")', {
              retryPolicy: { retryOn: ['error'], maxAttempts: 3, backoff: 'linear', baseDelayMs: 100, jitter: false },
            }),
          )
        ).id,
      )
      expect(retried.state).toBe('FAILED')
      expect(retried.attempts).toBe(3)
      // Linear backoff: 100 ms then 200 ms between the attempts.
      expect(Date.now() - started).toBeGreaterThanOrEqual(300)
      expect((await log(retried)).filter((step) => step === 'RUNNING>PENDING')).toHaveLength(2)
    })
  })

  describe('dependencies, deadlines, priority', () => {
    test('a dependent starts after its dependency completed and reads its value and files under deps/<id>/', async () => {
      const [first, second] = await execgate.tasks.submitMany([
        { id: 'producer-1', ...js('await write_file("out.txt", "hello"); 21') },
        js(
          'const v = JSON.parse(await read_file("deps/producer-1/value.json")); (await ' +
            'read_file("deps/producer-1/files/out.txt")) + ":" + v * 2',
          { dependencies: ['producer-1'] },
        ),
      ])
      const done = await execgate.tasks.wait(second!.id)
      expect([done.state, done.reason]).toEqual(['COMPLETED', 'completed'])
      expect(done.result?.value).toBe('hello:42')
      const firstStarted = (await execgate.tasks.scheduler.store.events(first!.id)).find((event) => event.to === 'COMPLETED')!
      const secondStarted = (await execgate.tasks.scheduler.store.events(second!.id)).find((event) => event.to === 'SPAWNING')!
      expect(secondStarted.seq).toBeGreaterThan(firstStarted.seq)
    })

    test('a failed dependency ends its dependents (and theirs) TERMINATED naming it', async () => {
      const [, child, grandchild] = await execgate.tasks.submitMany([
        { id: 'failing-1', ...js('throw new Error("no data")') },
        { id: 'child-1', ...js('1', { dependencies: ['failing-1'] }) },
        { id: 'grandchild-1', ...js('1', { dependencies: ['child-1'] }) },
      ])
      expect((await execgate.tasks.wait(child!.id)).reason).toMatch(/^dependency failing-1 FAILED/)
      const last = await execgate.tasks.wait(grandchild!.id)
      expect(last.state).toBe('TERMINATED')
      expect(last.reason).toMatch(/^dependency child-1 TERMINATED/)
    })

    test('a dependency id its batch never stored ends its dependents (and theirs) TERMINATED, saying it does not exist', async () => {
      // The batch's first task is answered by its idempotency key with a task stored earlier under another id: no task of
      // the tenant has the id the batch named, so its dependents would otherwise wait for ever.
      const caller = { tenant: 'forgetful' }
      const earlier = await execgate.tasks.wait((await execgate.tasks.submit(js('1', { idempotencyKey: 'pin-gone' }), caller)).id, caller)
      const [answered, dependent, second] = await execgate.tasks.submitMany(
        [
          { id: 'gone-1', ...js('2', { idempotencyKey: 'pin-gone' }) },
          { id: 'needs-gone-1', ...js('3', { dependencies: ['gone-1'] }) },
          js('4', { dependencies: ['needs-gone-1'] }),
        ],
        caller,
      )
      expect(answered!.id).toBe(earlier.id)
      expect(await execgate.tasks.wait(dependent!.id, { ...caller, timeoutMs: 10_000 })).toMatchObject({
        state: 'TERMINATED',
        reason: expect.stringMatching(/^dependency gone-1 does not exist for tenant forgetful \(/),
        attempts: 0,
      })
      expect(await execgate.tasks.wait(second!.id, { ...caller, timeoutMs: 10_000 })).toMatchObject({
        state: 'TERMINATED',
        reason: expect.stringMatching(/^dependency needs-gone-1 TERMINATED: dependency gone-1 does not exist/),
      })
    })

    test('a dependent its readiness write found SUSPENDED is made ready, and runs, when resumed', async () => {
      // Its dependency completed while it was being suspended: the readiness write (only while PENDING) found it
      // SUSPENDED and left it not ready, and no other end will come to make it ready. Written as that race leaves it,
      // by another connection to the store.
      const dependency = await execgate.tasks.wait((await execgate.tasks.submit(js('7'))).id)
      expect(dependency.state).toBe('COMPLETED')
      const store = secondConnection()
      const id = `held-dependent-${storeKind}`
      try {
        await store.insert(
          [
            storedTask({
              id,
              tenant: dependency.tenant,
              state: 'SUSPENDED',
              reason: 'suspended by the caller',
              request: js('8').request,
              dependencies: [dependency.id],
              ready: false,
            }),
          ],
          'submitted',
        )
      } finally {
        await store.close()
      }
      expect(await execgate.tasks.resume(id, {}, { tenant: dependency.tenant })).toMatchObject({ state: 'PENDING', ready: true })
      expect(await execgate.tasks.wait(id, { tenant: dependency.tenant, timeoutMs: 20_000 })).toMatchObject({
        state: 'COMPLETED',
        result: { status: 'ok', value: 8 },
      })
    })

    test('cycles and unknown dependencies are refused at submission, and nothing of the batch is stored', async () => {
      await expect(
        execgate.tasks.submitMany([
          { id: 'cycle-a', ...js('1', { dependencies: ['cycle-b'] }) },
          { id: 'cycle-b', ...js('1', { dependencies: ['cycle-a'] }) },
        ]),
      ).rejects.toThrow(/dependency cycle: cycle-a -> cycle-b -> cycle-a/)
      await expect(execgate.tasks.submit(js('1', { dependencies: ['no-such-task'] }))).rejects.toThrow(/unknown dependency "no-such-task"/)
      expect(await execgate.tasks.get('cycle-a')).toBeUndefined()
    })

    test(
      'a start-by deadline that passes before the start ends the task TERMINATED with reason ' + 'deadline, before its dependency ends',
      async () => {
        const blocker = await execgate.tasks.submit(js(busy(3000), { id: 'blocker-1' }))
        const deadline = new Date(Date.now() + 300)
        const late = await execgate.tasks.submit(js('1', { dependencies: [blocker.id], deadline: deadline.toISOString() }))
        const done = await execgate.tasks.wait(late.id)
        expect(done.state).toBe('TERMINATED')
        expect(done.reason).toMatch(/^deadline/)
        const ended = (await execgate.tasks.scheduler.store.events(late.id)).at(-1)!
        // An order, not a clock: the deadline ended it while its dependency (ten times the deadline) still ran.
        const blockerDone = await execgate.tasks.wait(blocker.id)
        expect(blockerDone.state).toBe('COMPLETED')
        const blockerEnded = (await execgate.tasks.scheduler.store.events(blocker.id)).at(-1)!
        expect(Date.parse(ended.at)).toBeGreaterThanOrEqual(deadline.getTime())
        expect(Date.parse(ended.at)).toBeLessThan(Date.parse(blockerEnded.at))
      },
    )

    test('higher priority starts first when slots are busy', async () => {
      const blockers = await Promise.all([0, 1].map(() => execgate.tasks.submit(js(busy(1000)))))
      // Both slots taken first (on Redis a claim goes through BullMQ, so a submit does not mean a start): only then
      // are the two contenders both waiting, and the order between them is the priority's alone.
      for (const blocker of blockers)
        while (!['RUNNING', 'COMPLETED'].includes((await execgate.tasks.get(blocker.id))?.state ?? ''))
          await new Promise((resolve) => setTimeout(resolve, 5))
      const low = await execgate.tasks.submit(js('1', { priority: 1 }))
      const high = await execgate.tasks.submit(js('1', { priority: 10 }))
      await Promise.all([...blockers, low, high].map((task) => execgate.tasks.wait(task.id)))
      const startOf = async (task: Task) =>
        (await execgate.tasks.scheduler.store.events(task.id)).find((event) => event.to === 'SPAWNING')!.seq
      expect(await startOf(high)).toBeLessThan(await startOf(low))
    })
  })

  describe('the caller', () => {
    test('an idempotency key returns the first task instead of a second', async () => {
      const first = await execgate.tasks.submit(js('7', { idempotencyKey: 'order-42' }))
      const again = await execgate.tasks.submit(js('7', { idempotencyKey: 'order-42' }))
      expect(again.id).toBe(first.id)
      const other = await execgate.tasks.submit(js('7', { idempotencyKey: 'order-42' }), { tenant: 'someone-else' })
      expect(other.id).not.toBe(first.id)
    })

    test("a tenant never sees another's tasks", async () => {
      const mine = await execgate.tasks.submit(js('1'), { tenant: 'acme' })
      expect(await execgate.tasks.get(mine.id, { tenant: 'globex' })).toBeUndefined()
      await expect(execgate.tasks.cancel(mine.id, { tenant: 'globex' })).rejects.toThrow(/no task/)
      expect((await execgate.tasks.list({}, { tenant: 'globex' })).tasks.map((task) => task.id)).not.toContain(mine.id)
      expect((await execgate.tasks.list({}, { tenant: 'acme' })).tasks.map((task) => task.id)).toContain(mine.id)
    })

    test("a dependency id its batch never stored does not reach another tenant's task of that id", async () => {
      // A batch's member answered by its idempotency key (a task stored earlier under another id) leaves the batch's
      // dependents naming an id no task of the tenant has. Another tenant may later store a task of that id.
      const mallory = { tenant: 'mallory' }
      for (const key of ['pin-out', 'pin-bad']) {
        const pinned = await execgate.tasks.submit(js('1', { idempotencyKey: key }), mallory)
        await execgate.tasks.wait(pinned.id, mallory)
      }
      const [, , spy, spyOfFailure] = await execgate.tasks.submitMany(
        [
          { id: 'named-out', ...js('2', { idempotencyKey: 'pin-out' }) },
          { id: 'named-bad', ...js('2', { idempotencyKey: 'pin-bad' }) },
          js('await read_file("deps/named-out/value.json")', { dependencies: ['named-out'] }),
          js('1', { dependencies: ['named-bad'] }),
        ],
        mallory,
      )
      const [secret, failing] = await execgate.tasks.submitMany(
        [
          { id: 'named-out', ...js('"s3cret"') },
          { id: 'named-bad', ...js('throw new Error("victim private detail")') },
        ],
        { tenant: 'victim' },
      )
      expect((await execgate.tasks.wait(secret!.id, { tenant: 'victim' })).state).toBe('COMPLETED')
      expect((await execgate.tasks.wait(failing!.id, { tenant: 'victim' })).state).toBe('FAILED')
      // Neither the victim's value nor its failure's words reach mallory's tasks (an outer bound: a run is ms).
      const seen = await Promise.all([spy, spyOfFailure].map((task) => execgate.tasks.wait(task!.id, { ...mallory, timeoutMs: 2000 })))
      expect(seen.map((task) => JSON.stringify(task.result ?? null) + task.reason)).toEqual([
        expect.not.stringContaining('s3cret'),
        expect.not.stringContaining('victim private detail'),
      ])
    })

    test('a running task cancelled after runs that ended stops, and no later run starts cancelled', async () => {
      // Runs that ended unaborted hand their AbortController on to later runs; a cancelled run's must never be.
      for (const code of ['1', '2']) expect((await execgate.tasks.wait((await execgate.tasks.submit(js(code))).id)).state).toBe('COMPLETED')
      const long = await execgate.tasks.submit(js(busy(30_000)))
      for (let at = Date.now(); (await execgate.tasks.get(long.id))?.state !== 'RUNNING';) {
        if (Date.now() - at > 20_000) throw new Error('the long task never started')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      expect((await execgate.tasks.cancel(long.id)).state).toBe('TERMINATED')
      // Long enough for the cancelled run to stop and give its slot back (its worker killed past the grace if need be).
      await new Promise((resolve) => setTimeout(resolve, 3000))
      for (const value of [3, 4, 5]) {
        const after = await execgate.tasks.wait((await execgate.tasks.submit(js(String(value)))).id)
        expect(after).toMatchObject({ state: 'COMPLETED', result: { status: 'ok', value } })
      }
    })

    test('cancel, suspend and resume; list filters by state and intent and pages', async () => {
      const blockers = await Promise.all([0, 1].map(() => execgate.tasks.submit(js(busy(500)), { tenant: 'pager' })))
      const queued = await execgate.tasks.submit(js('5', { intentId: 'i-9' }), { tenant: 'pager' })
      const cancelled = await execgate.tasks.submit(js('5'), { tenant: 'pager' })
      expect((await execgate.tasks.suspend(queued.id, { tenant: 'pager' })).state).toBe('SUSPENDED')
      expect((await execgate.tasks.cancel(cancelled.id, { tenant: 'pager' })).state).toBe('TERMINATED')
      await expect(execgate.tasks.cancel(cancelled.id, { tenant: 'pager' })).rejects.toThrow(/is TERMINATED and cannot be cancelled/)
      expect((await execgate.tasks.list({ state: 'SUSPENDED' }, { tenant: 'pager' })).tasks.map((task) => task.id)).toEqual([queued.id])
      expect((await execgate.tasks.list({ intentId: 'i-9' }, { tenant: 'pager' })).tasks.map((task) => task.id)).toEqual([queued.id])
      const page1 = await execgate.tasks.list({ limit: 3 }, { tenant: 'pager' })
      const page2 = await execgate.tasks.list({ limit: 3, cursor: page1.nextCursor }, { tenant: 'pager' })
      expect(page1.tasks).toHaveLength(3)
      expect(page2.tasks.map((task) => task.id)).toEqual([cancelled.id])
      expect(page2.nextCursor).toBeUndefined()
      await execgate.tasks.resume(queued.id, {}, { tenant: 'pager' })
      expect((await execgate.tasks.wait(queued.id, { tenant: 'pager' })).result?.value).toBe(5)
      await Promise.all(blockers.map((task) => execgate.tasks.wait(task.id, { tenant: 'pager' })))
    })

    test('events() yields the transitions and the output as an async iterator until the task ends', async () => {
      const task = await execgate.tasks.submit(js('console.log("working"); 1'))
      const items = []
      for await (const item of execgate.tasks.events(task.id)) items.push(item)
      expect(items.filter((item) => item.type === 'transition').map((item) => item.type === 'transition' && item.event.to)).toEqual([
        'PENDING',
        'SPAWNING',
        'RUNNING',
        'COMPLETED',
      ])
    })

    test('an invalid task is refused naming the field', async () => {
      await expect(execgate.tasks.submit({ request: { language: 'javascript', code: '1' }, priority: 1.5 } as never)).rejects.toThrow(
        /priority must be integer/,
      )
      await expect(execgate.tasks.submit(js('1', { deadline: 'tomorrow' }))).rejects.toThrow(/deadline must be an ISO 8601/)
    })
  })

  test('a shutdown that stops a run queues the task again without spending an attempt; the next process completes it', async () => {
    const shutdownDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-tasks-shutdown-'))
    const execute = (request: Parameters<Execgate['execute']>[0], options: Parameters<Execgate['execute']>[1]) =>
      execgate.execute(request, options)
    const backend = storeKind === 'redis' ? backendFor() : { dataDir: shutdownDir }
    try {
      const first = createTaskService({ execute, ...backend })
      const task = await first.submit(js(busy(2000), { timeoutMs: 4000 }))
      while ((await first.get(task.id))?.state !== 'RUNNING') await new Promise((resolve) => setTimeout(resolve, 10))
      await first.close({ abort: true })
      const second = createTaskService({ execute, ...backend })
      try {
        expect(await second.get(task.id)).toMatchObject({ state: 'PENDING', attempts: 0, reason: 'interrupted by a shutdown; runs again' })
        expect(await second.wait(task.id)).toMatchObject({ state: 'COMPLETED', attempts: 1 })
      } finally {
        await second.close()
      }
    } finally {
      fs.rmSync(shutdownDir, { recursive: true, force: true })
    }
  })
})
