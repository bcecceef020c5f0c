import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { FABRIC_STORE_KINDS, type FabricStoreKind } from '../../src/config/store-kinds'
import { FABRIC_STORE_DRIVERS, storeDriver, type FabricStoreSettings } from '../../src/fabric/drivers'
import type { NewStepEvent, PlanEvent } from '../../src/fabric/plans'
import { SqliteTaskStore, type TaskState, type TaskStore } from '../../src/fabric/tasks'
import { startRedisServer, type RedisServer } from '../../bench/redis-server'
import { interleavedSqlite } from './interleaved-sqlite'
import { storedPlan, storedTask } from './stored-records'

/** The SQLite task store's read of a task, the one each of its read-then-write transactions starts with. */
const TASK_READ = 'SELECT body FROM tasks WHERE id = ?'

/**
 * The store drivers' shared suite (src/fabric/drivers): every kind named in FABRIC_STORE_KINDS has a driver, and each
 * driver's stores, opened the way the composition root opens them (a temp dir; a real redis-server on loopback), keep
 * the contract the services above rely on: due tasks in the one order (priority, then submission, ties within one
 * batch and one millisecond included), plans written by compare-and-set, registries that find what they were given.
 * The ledger's record stores have their own shared suite (test/fabric/ledger/record-stores.test.ts), run on both.
 */

test('every store kind has a driver, and the table holds no other', () => {
  expect(Object.keys(FABRIC_STORE_DRIVERS).sort()).toEqual([...FABRIC_STORE_KINDS].sort())
  for (const kind of FABRIC_STORE_KINDS) expect(storeDriver(kind).description).toEqual(expect.any(String))
})

// One millisecond for all: the order may not depend on the clock.
const at = new Date().toISOString()
const taskOf = (id: string, priority: number) => storedTask({ id, priority, tenant: id.startsWith('g') ? 'globex' : 'acme' }, at)
const planOf = (id: string) => storedPlan(id, at)

/** Submitted in this order, in three writes (the middle one a batch of four): the due order is fixed by it. */
const SUBMISSIONS: [id: string, priority: number][][] = [
  [['a-low', -5]],
  [
    ['b-tie-1', 10],
    ['g-tie-2', 10],
    ['b-tie-3', 10],
    ['b-zero', 0],
  ],
  [
    ['c-tie-4', 10],
    ['c-high', 50],
  ],
]
const DUE_ORDER = ['c-high', 'b-tie-1', 'g-tie-2', 'b-tie-3', 'c-tie-4', 'b-zero', 'a-low']

describe.each(FABRIC_STORE_KINDS)('the %s driver', (kind: FabricStoreKind) => {
  const driver = storeDriver(kind)
  let redis: RedisServer | undefined
  let settings: FabricStoreSettings
  let dataDir: string
  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `execgate-drivers-${kind}-`))
    // Without redis-server the Redis half fails with the command that installs it (never skipped).
    if (driver.shared) redis = await startRedisServer()
    settings = { dataDir, redisUrl: redis?.url ?? 'redis://127.0.0.1:1', redisPrefix: 'drivers', leaseMs: 30_000 }
  }, 60_000)
  afterAll(async () => {
    await redis?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  it('starts due tasks in the one order: priority, then submission (ties in one batch and one millisecond kept)', async () => {
    const store: TaskStore = driver.tasks(settings)
    try {
      for (const batch of SUBMISSIONS)
        await store.insert(
          batch.map(([id, priority]) => taskOf(id, priority)),
          'submitted',
        )
      expect((await store.due(Date.now(), 100)).map((task) => task.id)).toEqual(DUE_ORDER)
      expect((await store.due(Date.now(), 3)).map((task) => task.id)).toEqual(DUE_ORDER.slice(0, 3))
      // A started task leaves the order; the rest keep theirs.
      await store.transition('b-tie-1', ['PENDING'], { to: 'SPAWNING', reason: 'started' })
      expect((await store.due(Date.now(), 100)).map((task) => task.id)).toEqual(DUE_ORDER.filter((id) => id !== 'b-tie-1'))
    } finally {
      await store.close()
    }
  })

  it('claims a task only at the attempt the claim counted from, on a copy another process made stale too', async () => {
    // Two stores on the same data: two processes. `here` keeps the copy of its own write; `there` moves the task on.
    const here = driver.tasks(settings)
    const there = driver.tasks(settings)
    const claimFrom = (attempts: number, now = Date.now()) => ({
      to: 'SPAWNING' as const,
      reason: `attempt ${attempts + 1}`,
      patch: { attempts: attempts + 1, owner: 'claimer' },
      claimOf: { attempts, now },
    })
    try {
      await here.insert(
        [
          taskOf('claim-run', 0),
          { ...taskOf('claim-unready', 0), ready: false },
          { ...taskOf('claim-later', 0), notBefore: Date.now() + 60_000 },
        ],
        'submitted',
      )
      expect((await there.transition('claim-run', ['PENDING'], claimFrom(0)))?.task.attempts).toBe(1)
      await there.transition('claim-run', ['SPAWNING'], { to: 'PENDING', reason: 'retry', patch: { owner: undefined } })
      // `here` still holds the task at attempt 0: a claim counted from it would run attempt 1 twice.
      expect(await here.transition('claim-run', ['PENDING'], claimFrom(0))).toBeUndefined()
      expect((await here.transition('claim-run', ['PENDING'], claimFrom(1)))?.task).toMatchObject({ state: 'SPAWNING', attempts: 2 })
      // Not ready, not due yet: no claim lands.
      expect(await here.transition('claim-unready', ['PENDING'], claimFrom(0))).toBeUndefined()
      expect(await here.transition('claim-later', ['PENDING'], claimFrom(0))).toBeUndefined()
      expect((await there.get('claim-later'))?.state).toBe('PENDING')
    } finally {
      await here.close()
      await there.close()
    }
  })

  it("answers an ended task's dependents with its end where the store reads them in the same write", async () => {
    const store: TaskStore = driver.tasks(settings)
    try {
      await store.insert([taskOf('end-a', 0), { ...taskOf('end-b', 0), dependencies: ['end-a'], ready: false }], 'submitted')
      const started = await store.transition('end-a', ['PENDING'], { to: 'RUNNING', reason: 'started' })
      expect(started?.dependents).toBeUndefined()
      const ended = await store.transition('end-a', ['RUNNING'], { to: 'COMPLETED', reason: 'completed' })
      // Both read them in the end's own write (Redis its script, SQLite its transaction): no query after it.
      expect(ended?.dependents?.map((task) => [task.id, task.state])).toEqual([['end-b', 'PENDING']])
      expect((await store.dependentsOf('end-a')).map((task) => task.id)).toEqual(['end-b'])
    } finally {
      await store.close()
    }
  })

  it('keeps plans by compare-and-set: of two writers of one revision, one wins', async () => {
    const store = driver.plans(settings)
    try {
      await store.insert(planOf('p-1'), [{ type: 'plan', at, version: 1, from: null, to: 'RUNNING', reason: 'submitted' }])
      const read = (await store.get('p-1'))!
      expect(read).toMatchObject({ id: 'p-1', rev: 1, state: 'RUNNING' })
      const first = await store.update({ ...read, rev: 2, reason: 'first' }, [])
      const second = await store.update({ ...read, rev: 2, reason: 'second' }, [])
      expect(first).toBeDefined()
      expect(second).toBeUndefined()
      expect(await store.get('p-1')).toMatchObject({ rev: 2, reason: 'first' })
      expect((await store.active()).map((plan) => plan.id)).toEqual(['p-1'])
    } finally {
      await store.close()
    }
  })

  it("ends a plan with its steps' last transitions in one write; a lost write keeps the copies", async () => {
    const store = driver.plans(settings)
    const step = (taskId: string, taskSeq: number, to: TaskState): NewStepEvent => ({
      type: 'step',
      at,
      version: 1,
      stepId: `step-${taskId}`,
      taskId,
      from: 'RUNNING',
      to,
      reason: to.toLowerCase(),
      attempt: 1,
      taskSeq,
    })
    const end = { type: 'plan' as const, at, version: 1, from: 'RUNNING' as const, to: 'COMPLETED' as const, reason: 'done' }
    try {
      await store.insert(planOf('p-end'), [{ type: 'plan', at, version: 1, from: null, to: 'RUNNING', reason: 'submitted' }])
      await store.mirror('p-end', [step('t-a', 5, 'RUNNING')])
      // Both drivers make it one write (Redis one script, SQLite one transaction): the engine ends every plan with it.
      const ended = await store.mirrorAndUpdate!(
        { ...planOf('p-end'), rev: 2, state: 'COMPLETED', reason: 'done' },
        // The first was copied above: not again.
        [step('t-a', 5, 'RUNNING'), step('t-a', 7, 'COMPLETED')],
        [end],
      )
      // Another write got there first (rev 2 is taken): the plan stays as it is, the step's copy lands all the same.
      const lost = await store.mirrorAndUpdate!(
        { ...planOf('p-end'), rev: 2, state: 'FAILED' },
        [step('t-b', 9, 'TERMINATED')],
        [{ ...end, to: 'FAILED' }],
      )
      expect(lost.written).toBeUndefined()
      expect(await store.get('p-end')).toMatchObject({ rev: 2, state: 'COMPLETED' })
      expect(await store.mirrored('p-end')).toEqual(
        new Map([
          ['t-a', 7],
          ['t-b', 9],
        ]),
      )
      // The log in the order written, each copy answered with its place in it (seqs run per plan on Redis, per file on SQLite).
      const log = await store.events('p-end')
      expect(log.map((event) => (event.type === 'step' ? event.taskSeq : event.type === 'plan' && event.to))).toEqual([
        'RUNNING',
        5,
        7,
        'COMPLETED',
        9,
      ])
      expect(ended.mirrored.map((event) => event.seq)).toEqual([log[2]!.seq])
      expect(ended.written?.map((event) => event.seq)).toEqual([log[3]!.seq])
      expect(lost.mirrored.map((event) => event.seq)).toEqual([log[4]!.seq])
    } finally {
      await store.close()
    }
  })

  it('copies a long run of step events at once, each answered with its place, and none twice', async () => {
    const store = driver.plans(settings)
    // More than one statement's worth on SQLite (RowInserter.ROWS, 16 rows a statement), one in the middle copied before.
    const steps: NewStepEvent[] = Array.from({ length: 150 }, (_, index) => ({
      type: 'step',
      at,
      version: 1,
      stepId: `step-${index % 3}`,
      taskId: `t-${index % 3}`,
      from: 'PENDING',
      to: 'SPAWNING',
      reason: `event ${index}`,
      attempt: 1,
      taskSeq: 1000 + index,
    }))
    try {
      await store.insert(planOf('p-long'), [{ type: 'plan', at, version: 1, from: null, to: 'RUNNING', reason: 'submitted' }])
      await store.mirror('p-long', [steps[70]!])
      const copied = await store.mirror('p-long', steps)
      const taskSeqOf = (event: PlanEvent) => (event.type === 'step' ? event.taskSeq : undefined)
      expect(copied.map(taskSeqOf)).toEqual(steps.filter((_, index) => index !== 70).map((event) => event.taskSeq))
      const log = (await store.events('p-long')).filter((event) => event.type === 'step')
      expect(log).toHaveLength(150)
      const placeOf = new Map(log.map((event) => [event.type === 'step' ? event.taskSeq : 0, event.seq]))
      for (const event of copied) expect(event.seq).toBe(placeOf.get(taskSeqOf(event)!))
      expect(await store.mirror('p-long', steps)).toEqual([])
    } finally {
      await store.close()
    }
  })

  it('opens registries that find what they were given, and says whether other nodes share them', async () => {
    const sandboxes = driver.sandboxRegistry(settings)
    const sessions = driver.sessionRegistry(settings)
    try {
      expect(sandboxes.shared).toBe(driver.shared)
      await sandboxes.heartbeat({ id: 'node-a', startedAt: at, heartbeatAt: at }, 60_000)
      expect((await sandboxes.nodes()).map((node) => node.id)).toEqual(['node-a'])
      const session = { id: 'acme/s-1', node: 'node-a', adapter: 'monty', updatedAt: at, hasState: false }
      expect(await sessions.claim(session, 60_000)).toBeUndefined()
      expect(await sessions.get('acme/s-1')).toMatchObject({ node: 'node-a', adapter: 'monty' })
    } finally {
      await Promise.all([sandboxes.close(), sessions.close()])
    }
  })

  it('opens a ledger record store and, when several nodes share it, a dispatcher for due tasks and an upload index', async () => {
    const records = driver.ledgerRecords(settings)
    try {
      expect(await records.tenants()).toEqual([])
    } finally {
      await records.close()
    }
    const dispatcher = driver.taskDispatcher(settings)
    expect(dispatcher !== undefined).toBe(driver.shared)
    await dispatcher?.close()
    // Uploads are indexed where every node sees them only on a shared store; else beside the uploads themselves.
    expect(driver.uploadIndex(settings) !== undefined).toBe(driver.shared)
  })
})

test("the SQLite task store: another process's commit between a transition's read and its write does not fail it", async () => {
  // Several workers on one file (docs/tasks.md, Workers): another process commits while this one is inside a transition,
  // after its read of the task and before its write. Begun deferred, the transaction then failed at its write
  // (SQLITE_BUSY_SNAPSHOT, which no busy wait helps), and a claim with it (in the pump: a rejection nobody handles).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-drivers-interleaved-'))
  const file = path.join(dir, 'tasks.sqlite')
  const sqlite = interleavedSqlite(TASK_READ)
  const store = new SqliteTaskStore({ file, driver: sqlite.driver })
  try {
    const other = sqlite.other(file)
    // Inserted by another store: this one has no copy of the task (it would transition on that without a read).
    const inserter = new SqliteTaskStore({ file })
    await inserter.insert([taskOf('claimed', 0), taskOf('bystander', 0)], 'submitted')
    await inserter.close()
    const otherWrite = () => other.prepare("UPDATE tasks SET priority = 1 WHERE id = 'bystander'").run()
    sqlite.arm(otherWrite)
    const claimed = await store.transition('claimed', ['PENDING'], {
      to: 'SPAWNING',
      reason: 'attempt 1 of 3',
      patch: { attempts: 1, owner: 'here' },
      claimOf: { attempts: 0, now: Date.now() },
    })
    expect(sqlite.fired).toBe(true)
    expect(claimed?.task).toMatchObject({ state: 'SPAWNING', attempts: 1, owner: 'here' })
    // The other process's write waits its turn: refused while the claim held the write lock, it lands after it.
    expect(String(sqlite.refused)).toMatch(/busy|locked/i)
    otherWrite()
    expect((await store.getMany(['claimed', 'bystander'])).map((task) => task.state)).toEqual(['SPAWNING', 'PENDING'])
    // The retry ran on the connection that was refused: committed, as a third connection sees.
    expect(sqlite.other(file).prepare("SELECT priority FROM tasks WHERE id = 'bystander'").get()).toEqual({ priority: 1 })
  } finally {
    sqlite.close()
    await store.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test("the SQLite task store: a readiness write never overwrites another process's claim made between its read and its write", async () => {
  // update() (the scheduler's readiness write) read the task, then wrote it back whole, outside a transaction: another
  // process's claim landing between the two was overwritten, the task PENDING again with its claim lost (and run twice).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-drivers-readiness-'))
  const file = path.join(dir, 'tasks.sqlite')
  const sqlite = interleavedSqlite(TASK_READ)
  const store = new SqliteTaskStore({ file, driver: sqlite.driver })
  try {
    // Inserted by another store: this one has no copy of the task (its write would be made over that, with no read).
    const inserter = new SqliteTaskStore({ file })
    await inserter.insert([storedTask({ id: 'dependent', ready: false }, at)], 'submitted')
    await inserter.close()
    // The other process's claim of it, as its store writes one (the row's state and the task's JSON).
    const claim = () =>
      sqlite
        .other(file)
        .prepare(
          `UPDATE tasks SET state = 'SPAWNING', attempts = 1,
           body = json_set(body, '$.state', 'SPAWNING', '$.attempts', 1, '$.owner', 'there') WHERE id = 'dependent'`,
        )
        .run()
    sqlite.arm(claim)
    const ready = await store.update('dependent', 'PENDING', { ready: true })
    expect(sqlite.fired).toBe(true)
    // Refused while the readiness write held the write lock; it lands after it.
    expect(ready).toMatchObject({ state: 'PENDING', ready: true })
    expect(String(sqlite.refused)).toMatch(/busy|locked/i)
    claim()
    expect(await store.get('dependent')).toMatchObject({ state: 'SPAWNING', attempts: 1, owner: 'there', ready: true })
  } finally {
    sqlite.close()
    await store.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('the SQLite task store: a transition on its copy of a task another process changed since lands on the task as stored', async () => {
  // A store transitions a task it wrote last on its copy, the row written only over the body it wrote: another
  // process's write since (a cancel, a field changed) makes that write miss, and the transition is made on a read.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-drivers-copy-'))
  const file = path.join(dir, 'tasks.sqlite')
  const store = new SqliteTaskStore({ file })
  const other = new SqliteTaskStore({ file })
  try {
    await store.insert([taskOf('moved-elsewhere', 0), taskOf('changed-elsewhere', 0)], 'submitted')
    expect(store.cached('moved-elsewhere')).toMatchObject({ state: 'PENDING' })
    // The other process suspends one, and gives the other a new notBefore (a field, not a transition).
    await other.transition('moved-elsewhere', ['PENDING'], { to: 'SUSPENDED', reason: 'suspended by the caller' })
    await other.update('changed-elsewhere', 'PENDING', { notBefore: 5 })
    const claim = { to: 'SPAWNING' as const, reason: 'attempt 1 of 3', patch: { attempts: 1, owner: 'here' } }
    // The copy says PENDING; the task is SUSPENDED: a readiness write over it writes nothing, nor does a claim.
    expect(await store.update('moved-elsewhere', 'PENDING', { ready: false })).toBeUndefined()
    expect(await store.transition('moved-elsewhere', ['PENDING'], claim)).toBeUndefined()
    expect(await store.get('moved-elsewhere')).toMatchObject({ state: 'SUSPENDED', attempts: 0 })
    // Still PENDING: the claim lands, on the task as stored (the other process's field kept), its event logged once.
    const claimed = await store.transition('changed-elsewhere', ['PENDING'], claim)
    expect(claimed?.task).toMatchObject({ state: 'SPAWNING', attempts: 1, owner: 'here', notBefore: 5 })
    expect(await other.get('changed-elsewhere')).toMatchObject({ state: 'SPAWNING', notBefore: 5 })
    expect((await store.events('changed-elsewhere')).map((event) => event.to)).toEqual(['PENDING', 'SPAWNING'])
    // And on its own copy again (the body it just wrote), no read needed: it ends.
    const ended = await store.transition('changed-elsewhere', ['SPAWNING'], { to: 'COMPLETED', reason: 'completed' })
    expect(ended?.task).toMatchObject({ state: 'COMPLETED', notBefore: 5 })
    expect(store.cached('changed-elsewhere')).toBeUndefined()
  } finally {
    await Promise.all([store.close(), other.close()])
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

/** The process's open descriptors of `file` (this process's connections to it). */
function descriptorsOf(file: string): number {
  return fs.readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return fs.readlinkSync(`/proc/self/fd/${fd}`) === file
    } catch {
      return false // closed meanwhile (the readdir's own descriptor)
    }
  }).length
}

test("the SQLite plan store joins the task store's connection, which stays open while either store is", async () => {
  // Two connections on one file each threw their page cache away at every commit of the other and read back what
  // they touched next (~40 page reads a 3-step plan). A second task store is another process's stand-in: its own.
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-drivers-join-'))
  const file = path.join(dataDir, 'tasks.sqlite')
  const settings: FabricStoreSettings = { dataDir, redisUrl: 'redis://127.0.0.1:1', redisPrefix: 'join', leaseMs: 30_000 }
  const driver = storeDriver('sqlite')
  const tasks = driver.tasks(settings)
  const other = driver.tasks(settings)
  try {
    expect(descriptorsOf(file)).toBe(2)
    const plans = driver.plans(settings)
    expect(descriptorsOf(file)).toBe(2)
    await plans.insert(planOf('p-joined'), [{ type: 'plan', at, version: 1, from: null, to: 'RUNNING', reason: 'submitted' }])
    // The tasks' store closed first (a shutdown's order is not fixed): the plans' goes on on the same connection.
    // (Not counted after a close: libsql lets a connection's file go when its statements are collected.)
    await tasks.close()
    expect(await plans.get('p-joined')).toMatchObject({ rev: 1, state: 'RUNNING' })
    await plans.update({ ...planOf('p-joined'), rev: 2, state: 'COMPLETED' }, [])
    await plans.close()
    // Closing twice is closing once: the other store's connection is not the one that goes.
    await plans.close()
    await other.insert([taskOf('after', 0)], 'submitted')
    expect((await other.get('after'))?.state).toBe('PENDING')
  } finally {
    await other.close()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
})
