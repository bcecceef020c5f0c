import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createResult, type ExecutionResult, type ExecutionStatus } from '../../../src/core'
import {
  SqliteTaskStore,
  TaskScheduler,
  backoffDelay,
  canTransition,
  outcomeOf,
  DEFAULT_RETRY_POLICY,
  type Task,
} from '../../../src/fabric/tasks'
import type { Logger } from '../../../src/observability/logger'

/** The failure table and backoff as pure rules (a unit test of error mapping: results are built, not run). */

const task = (attempts: number, retryOn: Task['retryPolicy']['retryOn'] = ['backend']): Task => ({
  id: 't',
  tenant: 'local',
  state: 'RUNNING',
  request: { language: 'javascript', code: '1' },
  priority: 0,
  requirements: {},
  dependencies: [],
  retryPolicy: { ...DEFAULT_RETRY_POLICY, retryOn, jitter: false },
  lane: 'batch',
  attempts,
  ready: true,
  notBefore: 0,
  reason: '',
  createdAt: '',
  updatedAt: '',
})

const result = (status: ExecutionStatus): ExecutionResult => createResult(status, 'x', { message: `it was ${status}` })

test.each([
  ['ok', 'complete'],
  ['timeout', 'terminate'],
  ['policy_violation', 'terminate'],
  ['memory_limit', 'suspend'],
  ['output_limit', 'suspend'],
  ['unavailable', 'retry'],
  ['internal_error', 'retry'],
  ['error', 'fail'],
  ['invalid_request', 'fail'],
  ['not_implemented', 'fail'],
] as const)('the failure table: %s → %s', (status, kind) => {
  expect(outcomeOf(task(1), result(status)).kind).toBe(kind)
})

test('a retryable failure fails once the attempts are spent; a user error retries only when the policy says so', () => {
  expect(outcomeOf(task(3), result('unavailable'))).toMatchObject({ kind: 'fail', reason: expect.stringMatching(/after 3 attempts/) })
  expect(outcomeOf(task(1, ['error']), result('error')).kind).toBe('retry')
  expect(outcomeOf(task(1, ['error']), result('unavailable')).kind).toBe('fail')
})

test('backoff: exponential doubles, linear adds, both capped; jitter stays within ±20 %', () => {
  const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1000, jitter: false }
  expect([1, 2, 3, 4, 5].map((attempt) => backoffDelay(policy, attempt))).toEqual([100, 200, 400, 800, 1000])
  expect([1, 2, 3].map((attempt) => backoffDelay({ ...policy, backoff: 'linear' }, attempt))).toEqual([100, 200, 300])
  expect(backoffDelay({ ...policy, jitter: true }, 2, () => 0)).toBe(160)
  expect(backoffDelay({ ...policy, jitter: true }, 2, () => 1)).toBe(240)
})

test('the lifecycle refuses transitions the seed does not draw', () => {
  expect(canTransition('PENDING', 'SPAWNING')).toBe(true)
  expect(canTransition('RUNNING', 'FAILED')).toBe(true)
  expect(canTransition('SUSPENDED', 'COMPLETED')).toBe(true)
  expect(canTransition('PENDING', 'COMPLETED')).toBe(false)
  expect(canTransition('COMPLETED', 'PENDING')).toBe(false)
})

test('a backend that answers unavailable is retried with backoff and the task completes', async () => {
  const store = new SqliteTaskStore({ file: ':memory:' })
  let calls = 0
  const scheduler = new TaskScheduler({
    store,
    tickMs: 20,
    execute: async () => (++calls < 3 ? result('unavailable') : createResult('ok', 'x', { value: 'done' })),
  })
  await scheduler.start()
  try {
    const [submitted] = await scheduler.submit(
      [{ request: { language: 'javascript', code: '1' }, retryPolicy: { baseDelayMs: 30, jitter: false } }],
      { tenant: 'local' },
    )
    const done = await scheduler.wait(submitted!.id)
    expect(done).toMatchObject({ state: 'COMPLETED', attempts: 3 })
    const retries = (await store.events(submitted!.id)).filter((event) => event.from === 'RUNNING' && event.to === 'PENDING')
    expect(retries.map((event) => event.reason)).toEqual([
      'unavailable: it was unavailable; retry 2/3 in 30 ms',
      'unavailable: it was unavailable; retry 3/3 in 60 ms',
    ])
  } finally {
    await scheduler.stop()
    await store.close()
  }
})

test('a store error while looking for due tasks is logged and tried again at the next tick, never an unhandled rejection', async () => {
  // The store failing for a moment (a locked file, a dropped connection): the pump's promise used to reject with no
  // handler, which ends a Node 20 process.
  class FailingTwice extends SqliteTaskStore {
    failures = 2
    override async due(now: number, limit: number): Promise<Task[]> {
      if (this.failures-- > 0) throw new Error('disk I/O error')
      return super.due(now, limit)
    }
  }
  const store = new FailingTwice({ file: ':memory:' })
  const logged: string[] = []
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => unhandled.push(reason)
  process.on('unhandledRejection', onUnhandled)
  const logger = { error: (_fields: object, message: string) => logged.push(message) } as unknown as Logger
  const scheduler = new TaskScheduler({ store, tickMs: 20, logger, execute: async () => createResult('ok', 'x', { value: 'done' }) })
  await scheduler.start()
  try {
    // Two at once: a batch is stored, then started by the pump (one alone is started by its submit).
    const submitted = await scheduler.submit(
      [{ request: { language: 'javascript', code: '1' } }, { request: { language: 'javascript', code: '2' } }],
      { tenant: 'local' },
    )
    const done = await Promise.all(submitted.map((task) => scheduler.wait(task.id)))
    expect(done.map((task) => task?.state)).toEqual(['COMPLETED', 'COMPLETED'])
    expect(store.failures).toBeLessThan(0)
    expect(logged.filter((message) => message.includes('pump failed'))).toHaveLength(2)
    await new Promise((resolve) => setImmediate(resolve))
    expect(unhandled).toEqual([])
  } finally {
    process.off('unhandledRejection', onUnhandled)
    await scheduler.stop()
    await store.close()
  }
})

test("a wait for a task running here takes its first look from the run's copy, and sees another process's cancel at a tick", async () => {
  // submit → wait reads nothing for a task this process runs (its end is told here); a change another process writes
  // (a cancel from the CLI) is not, and is read at the next tick, as any other process's change is.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-wait-copy-'))
  const file = path.join(dir, 'tasks.sqlite')
  const store = new SqliteTaskStore({ file })
  const other = new SqliteTaskStore({ file })
  let finish: (result: ExecutionResult) => void = () => undefined
  const scheduler = new TaskScheduler({ store, tickMs: 50, execute: () => new Promise((resolve) => (finish = resolve)) })
  await scheduler.start()
  try {
    const [submitted] = await scheduler.submit([{ request: { language: 'javascript', code: '1' } }], { tenant: 'local' })
    expect(store.cached(submitted!.id)).toMatchObject({ state: 'RUNNING' })
    const reads = jest.spyOn(store, 'get')
    const waiting = scheduler.wait(submitted!.id)
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(reads).not.toHaveBeenCalled()
    await other.transition(submitted!.id, ['RUNNING'], { to: 'TERMINATED', reason: 'cancelled by the caller' })
    const started = Date.now()
    expect(await waiting).toMatchObject({ state: 'TERMINATED', reason: 'cancelled by the caller' })
    expect(Date.now() - started).toBeLessThan(1000)
    expect(reads).toHaveBeenCalledTimes(1)
    // The run's late end lands nowhere: the task stays as the other process left it.
    finish(createResult('ok', 'x', { value: 'late' }))
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await other.get(submitted!.id)).toMatchObject({ state: 'TERMINATED' })
  } finally {
    finish(createResult('ok', 'x', { value: 'late' }))
    await scheduler.stop()
    await Promise.all([store.close(), other.close()])
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
