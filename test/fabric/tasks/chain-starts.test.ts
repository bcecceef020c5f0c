import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createResult, type ExecutionRequest, type ExecutionResult } from '../../../src/core'
import { SqliteTaskStore, TaskScheduler, type Task, type TaskSpec } from '../../../src/fabric/tasks'

/**
 * The SQLite store without a dispatcher starts a chain's steps inside the writes that make them due: a batch's first
 * due task in the batch's insert, and a dependent its dependency's completion makes ready in that completion's own
 * transaction (made ready, claimed and started there: no readiness write, no look for due tasks, no claim commit of
 * its own). Each only when this process has a slot and nothing due comes first in the due order. A real store on a
 * file and a real scheduler; the runs are the test's (each task's code names it, and the test decides when it ends).
 */

/** The store calls the chain's starts save. */
const COUNTED = ['insert', 'insertAndStart', 'update', 'due', 'transitions'] as const

/** The store, counting the writes and looks the chain's starts save (its own calls of them included). */
class CountingStore extends SqliteTaskStore {
  readonly calls = { insert: 0, insertAndStart: 0, update: 0, due: 0, transitions: 0 }

  constructor(...args: ConstructorParameters<typeof SqliteTaskStore>) {
    super(...args)
    for (const name of COUNTED) {
      const method = (this[name] as (...args: unknown[]) => unknown).bind(this)
      Object.defineProperty(this, name, {
        value: (...args: unknown[]) => {
          this.calls[name]++
          return method(...args)
        },
      })
    }
  }
}

/** Runs whose end the test decides: each run's code names it; `end(name)` ends it ok; the runs at once are counted. */
class Runs {
  readonly started: string[] = []
  /** Each run's request files, by name: a dependent's are its dependencies' outputs. */
  readonly files = new Map<string, { path: string; content?: string }[]>()
  running = 0
  mostAtOnce = 0
  private readonly waiting = new Map<string, (result: ExecutionResult) => void>()
  private readonly held = new Set<string>()

  constructor(held: readonly string[] = []) {
    for (const name of held) this.held.add(name)
  }

  readonly execute = (request: ExecutionRequest, options: { signal?: AbortSignal }): Promise<ExecutionResult> => {
    const name = request.code
    this.started.push(name)
    this.files.set(name, (request.files ?? []) as { path: string; content?: string }[])
    this.running++
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running)
    return new Promise<ExecutionResult>((resolve) => {
      const finish = (result: ExecutionResult) => {
        this.running--
        resolve(result)
      }
      options.signal?.addEventListener('abort', () => finish(createResult('error', 'x', { message: 'aborted' })))
      if (this.held.has(name)) this.waiting.set(name, finish)
      else setImmediate(() => finish(createResult('ok', 'x', { value: name })))
    })
  }

  /** Ends a held run once it has started. */
  async end(name: string): Promise<void> {
    await until(() => this.waiting.has(name))
    this.waiting.get(name)!(createResult('ok', 'x', { value: name }))
  }
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const started = Date.now()
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

const step = (id: string, fields: Partial<TaskSpec> = {}): TaskSpec => ({ id, request: { language: 'javascript', code: id }, ...fields })

describe('chained tasks on the SQLite store, started inside the writes that make them due', () => {
  let dir: string
  let store: CountingStore
  let scheduler: TaskScheduler | undefined
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-chain-starts-'))
    store = new CountingStore({ file: path.join(dir, 'tasks.sqlite') })
  })
  afterEach(async () => {
    await scheduler?.stop({ abort: true })
    scheduler = undefined
    await store.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const start = async (runs: Runs, concurrency = 4) => {
    // A long tick: every start here is the chain's own, none a tick's look.
    scheduler = new TaskScheduler({ store, concurrency, tickMs: 60_000, execute: runs.execute })
    await scheduler.start()
    return scheduler
  }
  const states = async (id: string) => (await store.events(id)).map((event) => event.to)

  test('a 3-step chain: its first step starts in the insert, each next in its dependency’s completion, the log complete', async () => {
    const runs = new Runs()
    const tasks = await start(runs)
    const before = { ...store.calls }
    const submitted = await tasks.submit([step('s1'), step('s2', { dependencies: ['s1'] }), step('s3', { dependencies: ['s2'] })], {
      tenant: 'local',
    })
    // Answered as submitted, the first already started.
    expect(submitted.map((task) => task.state)).toEqual(['PENDING', 'PENDING', 'PENDING'])
    expect(await tasks.wait('s3', 5000)).toMatchObject({ state: 'COMPLETED', attempts: 1, ready: true })
    expect(runs.started).toEqual(['s1', 's2', 's3'])
    // One insert that started s1, then no readiness write, no look for due tasks and no claim of their own.
    expect({
      insert: store.calls.insert - before.insert,
      insertAndStart: store.calls.insertAndStart - before.insertAndStart,
      update: store.calls.update - before.update,
      due: store.calls.due - before.due,
      transitions: store.calls.transitions - before.transitions,
    }).toEqual({ insert: 0, insertAndStart: 1, update: 0, due: 0, transitions: 0 })
    for (const id of ['s1', 's2', 's3']) expect(await states(id)).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'COMPLETED'])
    // In the log's order: each step claimed and started after its dependency completed (the same write, in order).
    const seqOf = async (id: string, to: string) => (await store.events(id)).find((event) => event.to === to)!.seq
    expect(await seqOf('s2', 'SPAWNING')).toBe((await seqOf('s1', 'COMPLETED')) + 1)
    expect(await seqOf('s3', 'SPAWNING')).toBe((await seqOf('s2', 'COMPLETED')) + 1)
    // Each run got its dependency's output as that one ended (the value it returned).
    expect(runs.files.get('s2')).toEqual([{ path: 'deps/s1/value.json', content: '"s1"' }])
    expect(runs.files.get('s3')).toEqual([{ path: 'deps/s2/value.json', content: '"s2"' }])
  })

  test('a due task of higher priority is not overtaken: it takes the freed slot, the dependent waits for it', async () => {
    const runs = new Runs(['a', 'high'])
    const tasks = await start(runs, 1)
    await tasks.submit([step('a'), step('b', { dependencies: ['a'] })], { tenant: 'local' })
    await until(() => runs.started.includes('a'))
    // Submitted while the only slot is taken: due, waiting, and ahead of b in the due order.
    await tasks.submit([step('high', { priority: 5 })], { tenant: 'local' })
    await runs.end('a')
    await runs.end('high')
    expect(await tasks.wait('b', 5000)).toMatchObject({ state: 'COMPLETED' })
    expect(runs.started).toEqual(['a', 'high', 'b'])
    expect(runs.mostAtOnce).toBe(1)
  })

  test('a dependent submitted before an equal-priority due task goes first, in its dependency’s slot', async () => {
    const runs = new Runs(['a', 'later'])
    const tasks = await start(runs, 1)
    await tasks.submit([step('a'), step('b', { dependencies: ['a'] })], { tenant: 'local' })
    await until(() => runs.started.includes('a'))
    await tasks.submit([step('later')], { tenant: 'local' })
    const { update, transitions } = store.calls
    await runs.end('a')
    await until(() => runs.started.includes('later'))
    expect(runs.started).toEqual(['a', 'b', 'later'])
    // b was started inside a's completion: never made ready by a write of its own, nor claimed by a look.
    expect(await states('b')).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'COMPLETED'])
    expect(store.calls.update).toBe(update)
    expect(store.calls.transitions).toBe(transitions + 1) // later's claim, by the look its slot freed
    await runs.end('later')
    expect(runs.mostAtOnce).toBe(1)
  })

  test('the slot limit holds: of two dependents one takes the ending run’s slot, the other waits for a free one', async () => {
    const runs = new Runs(['a', 'long', 'b'])
    const tasks = await start(runs, 2)
    await tasks.submit([step('long')], { tenant: 'local' })
    await tasks.submit([step('a'), step('b', { dependencies: ['a'] }), step('c', { dependencies: ['a'] })], { tenant: 'local' })
    await until(() => runs.started.includes('a') && runs.started.includes('long'))
    await runs.end('a')
    await until(() => runs.started.includes('b'))
    // Two slots, both held (long, b): c is ready and waits.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(runs.started).toEqual(['long', 'a', 'b'])
    expect(await store.get('c')).toMatchObject({ state: 'PENDING', ready: true })
    await runs.end('b')
    expect(await tasks.wait('c', 5000)).toMatchObject({ state: 'COMPLETED' })
    expect(runs.mostAtOnce).toBe(2)
    await runs.end('long')
  })

  test('a dependent whose other dependency has not completed does not start; that one’s completion starts it', async () => {
    const runs = new Runs(['a', 'x'])
    const tasks = await start(runs)
    await tasks.submit([step('a'), step('x'), step('d', { dependencies: ['a', 'x'] })], { tenant: 'local' })
    await until(() => runs.started.includes('a') && runs.started.includes('x'))
    await runs.end('a')
    await until(async () => (await store.get('a'))?.state === 'COMPLETED')
    await new Promise((resolve) => setTimeout(resolve, 30))
    expect(await store.get('d')).toMatchObject({ state: 'PENDING', ready: false })
    expect(runs.started).not.toContain('d')
    const updates = store.calls.update
    await runs.end('x')
    expect(await tasks.wait('d', 5000)).toMatchObject({ state: 'COMPLETED' })
    expect(store.calls.update).toBe(updates)
    expect(await states('d')).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'COMPLETED'])
  })

  test('a dependent started so is cancelled like any run, and one past its start-by deadline is not started', async () => {
    const runs = new Runs(['a', 'b'])
    const tasks = await start(runs)
    const past = new Date(Date.now() + 150).toISOString()
    await tasks.submit([step('a'), step('b', { dependencies: ['a'] }), step('late', { dependencies: ['a'], deadline: past })], {
      tenant: 'local',
    })
    await until(() => runs.started.includes('a'))
    await new Promise((resolve) => setTimeout(resolve, 200))
    await runs.end('a')
    await until(() => runs.started.includes('b'))
    expect(await tasks.cancel('b')).toMatchObject({ state: 'TERMINATED' })
    expect(await tasks.wait('b', 5000)).toMatchObject({ state: 'TERMINATED', reason: 'cancelled by the caller' })
    expect(await tasks.wait('late', 5000)).toMatchObject({
      state: 'TERMINATED',
      reason: expect.stringMatching(/^deadline: not started by/),
    })
    expect(runs.started).not.toContain('late')
  })

  test('a run started so, left by a process that died, is recovered as any other run of a dead owner', async () => {
    const runs = new Runs(['a', 'b'])
    const tasks = await start(runs)
    await tasks.submit([step('a'), step('b', { dependencies: ['a'] })], { tenant: 'local' })
    await runs.end('a')
    await until(() => runs.started.includes('b'))
    const held = (await store.get('b')) as Task
    expect(held).toMatchObject({ state: 'RUNNING', attempts: 1, owner: expect.any(String) })
    // Another process on the same file whose check finds b's owner gone: its recovery retries b, which completes there.
    const other = new SqliteTaskStore({ file: path.join(dir, 'tasks.sqlite') })
    const again = new Runs()
    const recovering = new TaskScheduler({ store: other, tickMs: 20, execute: again.execute, ownerAlive: () => false })
    try {
      await recovering.start()
      await until(() => again.started.includes('b'))
      await until(async () => (await other.get('b'))?.state === 'COMPLETED')
      expect((await other.events('b')).map((event) => event.to)).toEqual([
        'PENDING',
        'SPAWNING',
        'RUNNING',
        'PENDING',
        'SPAWNING',
        'RUNNING',
        'COMPLETED',
      ])
    } finally {
      await recovering.stop()
      await other.close()
    }
  })
})
