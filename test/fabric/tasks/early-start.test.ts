import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createResult, type ExecutionRequest, type ExecutionResult } from '../../../src/core'
import type { ExecuteOptions } from '../../../src/execution/types'
import { createExecgate, type Execgate } from '../../../src'
import { LEDGER_SQLITE_FILE_NAME } from '../../../src/fabric/ledger'
import { SqliteTaskStore, TASKS_SQLITE_FILE_NAME, TaskScheduler, type Task, type TaskSpec } from '../../../src/fabric/tasks'
import { storedTask } from '../stored-records'

/**
 * A task submitted to a process with a free slot (a lone task, or a batch's first due task) has its run begun before
 * the write that stores and starts it (TaskRunner.early): the write and the run's way to its engine overlap. What the
 * run tells is heard only after its start is; a run whose start is not written (a due task came first, the write
 * failed) is aborted and unheard. A real store on a file and a real scheduler; the runs are the test's, each telling
 * one line of output at once (as an engine that runs inline does, inside `execute`).
 */

interface Call {
  code: string
  signal?: AbortSignal
}

class Runs {
  readonly calls: Call[] = []
  readonly order: string[] = []

  execute = (request: ExecutionRequest, options: ExecuteOptions): Promise<ExecutionResult> => {
    const code = request.code
    const n = this.calls.filter((call) => call.code === code).length + 1
    this.calls.push({ code, ...(options.signal ? { signal: options.signal } : {}) })
    this.order.push(`execute ${code}`)
    options.onOutput?.('stdout', `${code} run ${n}`)
    return new Promise((resolve) => setImmediate(() => resolve(createResult('ok', 'x', { value: `${code} run ${n}` }))))
  }
}

const spec = (id: string, fields: Partial<TaskSpec> = {}): TaskSpec => ({ id, request: { language: 'javascript', code: id }, ...fields })

describe('a lone task begun before its start is written', () => {
  let dir: string
  let file: string
  let store: SqliteTaskStore
  let scheduler: TaskScheduler | undefined
  let runs: Runs
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-early-start-'))
    file = path.join(dir, 'tasks.sqlite')
    store = new SqliteTaskStore({ file })
    runs = new Runs()
  })
  afterEach(async () => {
    await scheduler?.stop({ abort: true })
    scheduler = undefined
    await store.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  /** A long tick: every start here is a submit's or an announcement's, none a tick's look. */
  const start = async (concurrency = 2) => {
    // Every run here is repeatable but the one named `session` (the ExecutionService's isRepeatable says so for real ones).
    const repeatable = (task: Task) => task.request.sessionId === undefined
    scheduler = new TaskScheduler({ store, concurrency, tickMs: 60_000, execute: runs.execute, repeatable })
    await scheduler.start()
    scheduler.onTransition((event) => runs.order.push(`${event.taskId} ${event.to}`))
    // The scheduler's own emitter: where a task stream hears a run's output, the moment it is told.
    ;(scheduler as unknown as { emitter: NodeJS.EventEmitter }).emitter.on('output', (item: { taskId: string; chunk: string }) =>
      runs.order.push(`output ${item.chunk}`),
    )
    return scheduler
  }

  test('its run begins before the write; its output is heard after its start', async () => {
    const tasks = await start()
    await tasks.submit([spec('lone')], { tenant: 'acme' })
    expect(await tasks.wait('lone', 5000)).toMatchObject({ state: 'COMPLETED', attempts: 1, result: { value: 'lone run 1' } })
    // Begun first; its start's transitions told after the write; the line it told inside `execute` held until then.
    expect(runs.order).toEqual(['execute lone', 'lone SPAWNING', 'lone RUNNING', 'output lone run 1', 'lone COMPLETED'])
    expect(runs.calls[0]!.signal?.aborted).toBe(false)
    expect((await store.events('lone')).map((event) => event.to)).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'COMPLETED'])
  })

  test("a batch's first due task is begun early too; the rest, and a task with an idempotency key, after their start", async () => {
    const tasks = await start()
    await tasks.submit([spec('b1'), spec('b2')], { tenant: 'acme' })
    await tasks.submit([spec('keyed', { idempotencyKey: 'k-1' })], { tenant: 'acme' })
    for (const id of ['b1', 'b2', 'keyed']) expect(await tasks.wait(id, 5000)).toMatchObject({ state: 'COMPLETED' })
    const position = (line: string) => runs.order.indexOf(line)
    // b1 started in the batch's insert, its run begun before it; b2 claimed after it, and keyed, each run after its start.
    expect(position('execute b1')).toBeLessThan(position('b1 RUNNING'))
    for (const id of ['b2', 'keyed']) expect(position(`${id} RUNNING`)).toBeLessThan(position(`execute ${id}`))
    // The key's retry is answered with the task stored before, and runs nothing.
    const again = await tasks.submit([spec('keyed-again', { idempotencyKey: 'k-1' })], { tenant: 'acme' })
    expect(again[0]!.id).toBe('keyed')
    expect(runs.calls.filter((call) => call.code === 'keyed-again')).toEqual([])
  })

  test('a run the service does not find repeatable (one that keeps a session) begins only after its start is written', async () => {
    const tasks = await start()
    await tasks.submit([spec('session', { request: { language: 'javascript', code: 'session', sessionId: 's-1' } })], { tenant: 'acme' })
    expect(await tasks.wait('session', 5000)).toMatchObject({ state: 'COMPLETED', attempts: 1 })
    expect(runs.order.indexOf('session RUNNING')).toBeLessThan(runs.order.indexOf('execute session'))
  })

  test('when a due task comes first, the run begun early is aborted and unheard; the task runs once in its turn', async () => {
    const tasks = await start()
    // Due and of a higher priority, written by another process: this one was not told (its tick is a minute away).
    const other = new SqliteTaskStore({ file })
    try {
      await other.insert([storedTask({ id: 'ahead', priority: 5, tenant: 'acme' }, new Date().toISOString())], 'submitted')
    } finally {
      await other.close()
    }
    await tasks.submit([spec('behind')], { tenant: 'acme' })
    // Stored PENDING behind 'ahead' and announced: the pump starts both, 'ahead' first.
    expect(await tasks.wait('behind', 5000)).toMatchObject({ state: 'COMPLETED', attempts: 1, result: { value: 'behind run 2' } })
    const begunEarly = runs.calls.find((call) => call.code === 'behind')!
    expect(begunEarly.signal?.aborted).toBe(true)
    expect(String((begunEarly.signal?.reason as Error).message)).toMatch(/not started/)
    // Only the run in its turn was heard, after its start; the log shows one attempt.
    expect(runs.order.filter((line) => line.startsWith('output behind'))).toEqual(['output behind run 2'])
    expect(runs.order.indexOf('output behind run 2')).toBeGreaterThan(runs.order.indexOf('behind RUNNING'))
    expect((await store.events('behind')).map((event) => event.to)).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'COMPLETED'])
    expect(await tasks.wait('ahead', 5000)).toMatchObject({ state: 'COMPLETED' })
  })

  test('an execute that throws at once fails the task begun early, saying why, and frees its slot', async () => {
    const execute = runs.execute
    runs.execute = (request, options) => {
      if (request.code === 'throws') throw new Error('engine exploded')
      return execute(request, options)
    }
    const tasks = await start(1)
    await tasks.submit([spec('throws')], { tenant: 'acme' })
    expect(await tasks.wait('throws', 5000)).toMatchObject({ state: 'FAILED', reason: expect.stringMatching(/engine exploded/) })
    await tasks.submit([spec('after')], { tenant: 'acme' })
    expect(await tasks.wait('after', 5000)).toMatchObject({ state: 'COMPLETED' })
  })

  test('when the write fails, the submit says so, the run begun early is aborted and unheard, and its slot is free', async () => {
    const tasks = await start(1)
    const insertAndStart = store.insertAndStart.bind(store)
    store.insertAndStart = async () => {
      throw new Error('disk full')
    }
    await expect(tasks.submit([spec('refused')], { tenant: 'acme' })).rejects.toThrow('disk full')
    expect(runs.calls.map((call) => [call.code, call.signal?.aborted])).toEqual([['refused', true]])
    store.insertAndStart = insertAndStart
    await tasks.submit([spec('next')], { tenant: 'acme' })
    expect(await tasks.wait('next', 5000)).toMatchObject({ state: 'COMPLETED' })
    expect(runs.order.filter((line) => line.startsWith('output'))).toEqual(['output next run 1'])
    expect(await store.get('refused')).toBeUndefined()
  })
})

/**
 * A real execgate (quickjs) with its task scheduler started. `behindAhead(id)` writes, as another process, a due task of
 * a higher priority just before the test submits task `id`, and later tells whether that task was stored while the
 * other still waited: then its insert did not start it, and a run begun early for it was dropped. The scheduler's own
 * look (every 200 ms) may take the task ahead first; a test tries again with new ids until the race went its way.
 */
async function withRealExecgate(
  ledger: boolean,
  body: (gate: Execgate, behindAhead: (id: string) => Promise<() => boolean>) => Promise<void>,
) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-early-real-'))
  const gate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'], adapter: 'quickjs' },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir: dir, ledger: { enabled: ledger } },
      // A profile whose runs may reach a host: a task under it must not be begun early.
      security: { profiles: { online: { network: ['api.example.com'] } } },
    },
  })
  const file = path.join(gate.config.fabric.dataDir, TASKS_SQLITE_FILE_NAME)
  const behindAhead = async (id: string) => {
    const other = new SqliteTaskStore({ file })
    await other.insert([storedTask({ id: `ahead-of-${id}`, priority: 5, tenant: 'local' })], 'submitted')
    await other.close()
    return () => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const db = new (require('libsql'))(file)
      const seq = (taskId: string, to: string) =>
        (db.prepare('SELECT seq FROM task_events WHERE task_id = ? AND to_state = ?').get(taskId, to) as { seq: number }).seq
      const waited = seq(id, 'PENDING') < seq(`ahead-of-${id}`, 'SPAWNING')
      db.close()
      return waited
    }
  }
  try {
    await gate.tasks.start()
    await body(gate, behindAhead)
  } finally {
    await gate.dispose()
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** The run entries of the execgate's ledger file, in order, once everything heard is written. */
async function ledgerEntries(gate: Execgate): Promise<{ status: string; code?: { sha256: string }; taskId?: string; attempt?: number }[]> {
  await gate.ledger.flush()
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const db = new (require('libsql'))(path.join(gate.config.fabric.dataDir, LEDGER_SQLITE_FILE_NAME))
  try {
    return (db.prepare('SELECT body FROM ledger_records ORDER BY seq').all() as { body: string }[]).map((row) => JSON.parse(row.body).entry)
  } finally {
    db.close()
  }
}

test("a real execgate: the dropped early run's ledger record names no task; the run in its turn does", () =>
  withRealExecgate(true, async (gate, behindAhead) => {
    let exercised = false
    for (let attempt = 1; attempt <= 5 && !exercised; attempt++) {
      const id = `behind-${attempt}`
      const code = `40 + ${attempt}`
      const waited = await behindAhead(id)
      await gate.tasks.submit({ id, request: { language: 'javascript', code } })
      expect(await gate.tasks.wait(id, { timeoutMs: 10_000 })).toMatchObject({ state: 'COMPLETED', attempts: 1 })
      if (!waited()) continue
      exercised = true
      const entries = await ledgerEntries(gate)
      const runs = entries.filter((entry) => entry.taskId === id)
      expect(runs.map((entry) => [entry.status, entry.attempt])).toEqual([['ok', 1]])
      // The run begun early was aborted and recorded with no task named (its code the same as the task's): `cancelled`,
      // or `ok` where it had finished before the abort reached its worker (a loaded machine).
      const dropped = entries.filter((entry) => entry.code?.sha256 === runs[0]!.code?.sha256 && entry.taskId === undefined)
      expect(dropped.map((entry) => entry.status)).toEqual([expect.stringMatching(/^(cancelled|ok)$/)])
    }
    expect(exercised).toBe(true)
  }))

test('a real execgate: a run that changes its session is not begun early, so a dropped start runs its code once', () =>
  withRealExecgate(false, async (gate, behindAhead) => {
    const count = { language: 'javascript' as const, code: 'globalThis.n = (globalThis.n ?? 0) + 1; n', sessionId: 'counter' }
    expect(await gate.execute(count)).toMatchObject({ status: 'ok', value: 1 })
    let exercised = false
    // Each task adds one to the counter; a run of it begun early and dropped would have added one more.
    for (let attempt = 1; attempt <= 5 && !exercised; attempt++) {
      const id = `counted-${attempt}`
      const waited = await behindAhead(id)
      await gate.tasks.submit({ id, request: count })
      expect(await gate.tasks.wait(id, { timeoutMs: 10_000 })).toMatchObject({ state: 'COMPLETED', result: { value: attempt + 1 } })
      exercised = waited()
    }
    expect(exercised).toBe(true)
  }))

test('a real execgate: a task under a profile that names a host is not begun early, so its code runs once', () =>
  withRealExecgate(true, async (gate, behindAhead) => {
    let exercised = false
    for (let attempt = 1; attempt <= 5 && !exercised; attempt++) {
      const id = `online-${attempt}`
      const waited = await behindAhead(id)
      await gate.tasks.submit({ id, request: { language: 'javascript', code: `50 + ${attempt}` } }, { profile: 'online' })
      expect(await gate.tasks.wait(id, { timeoutMs: 10_000 })).toMatchObject({ state: 'COMPLETED', attempts: 1 })
      if (!waited()) continue
      exercised = true
      const entries = await ledgerEntries(gate)
      // The task's own run is the only run of its code: none was begun before its start and dropped.
      const own = entries.filter((entry) => entry.taskId === id)
      expect(own).toHaveLength(1)
      expect(entries.filter((entry) => entry.code?.sha256 === own[0]!.code?.sha256)).toHaveLength(1)
    }
    expect(exercised).toBe(true)
  }))
