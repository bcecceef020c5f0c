import { Redis } from 'ioredis'
import { REDIS_DRIVER } from '../../../src/fabric/drivers/redis'
import { RedisTaskStore } from '../../../src/fabric/tasks'
import { redisExecgate } from '../redis-execgate'
import { storedTask } from '../stored-records'

/**
 * Round trips the Redis store saves, and what they must not cost: an ended task read again is answered from the store's
 * own copy (it never changes again); a new task's announcement goes with its insert on the store's connection, not
 * after the insert's answer, and lands after it all the same (each task runs, once); a new plan's insert goes on that
 * connection too, its steps' insert right behind it. A real redis-server, BullMQ, quickjs.
 */

const fixture = redisExecgate('round-trips')
let peek: Redis

beforeAll(() => {
  peek = new Redis(fixture.redisUrl)
})

afterAll(() => {
  peek?.disconnect()
})

/** How many times redis-server ran `command` so far (INFO commandstats). */
async function calls(command: string): Promise<number> {
  const stats = await peek.info('commandstats')
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0)
}

test('the driver sends a store’s announcements on its connection, and tasks announced with their insert each run once', async () => {
  const settings = { dataDir: fixture.dataDir, redisUrl: fixture.redisUrl, redisPrefix: `order${process.pid}`, leaseMs: 30_000 }
  const store = REDIS_DRIVER.tasks(settings)
  const dispatcher = REDIS_DRIVER.taskDispatcher(settings, store)
  expect(dispatcher?.dispatchBehindStoreWrites).toBeInstanceOf(Function)
  await dispatcher?.close()
  await store.close()
  // The execgate's own wiring does the same: every task submitted at once (each its own insert, its announcement sent
  // right behind it) starts after its insert landed, and runs once.
  const submitted = await Promise.all(
    Array.from({ length: 24 }, (_, index) => fixture.execgate.tasks.submit({ request: { language: 'javascript', code: `${index} * 2` } })),
  )
  const done = await Promise.all(submitted.map((task) => fixture.execgate.tasks.scheduler.wait(task.id, 30_000)))
  done.forEach((task, index) => expect(task).toMatchObject({ state: 'COMPLETED', attempts: 1, result: { value: index * 2 } }))
  for (const task of submitted)
    expect((await fixture.execgate.tasks.scheduler.store.events(task.id)).map((event) => event.to)).toEqual([
      'PENDING',
      'SPAWNING',
      'RUNNING',
      'COMPLETED',
    ])
}, 60_000)

test('an ended task is read from the store’s own copy; a task not ended here is read from Redis', async () => {
  const store = new RedisTaskStore({ redis: new Redis(fixture.redisUrl), prefix: `ended${process.pid}`, ownsConnection: true })
  try {
    const [ending, other] = await store.insert(
      [storedTask({ id: 'ending' }), storedTask({ id: 'other', request: { language: 'javascript', code: '2' } })],
      'submitted',
    )
    await store.transitions(
      ending!.id,
      ['PENDING'],
      [
        { to: 'SPAWNING', reason: 'claimed' },
        { to: 'RUNNING', reason: 'started' },
      ],
    )
    await store.transition(ending!.id, ['RUNNING'], { to: 'COMPLETED', reason: 'completed', patch: { owner: undefined } })
    const before = await calls('mget')
    const [again] = await store.getMany([ending!.id])
    expect(again).toMatchObject({ id: 'ending', state: 'COMPLETED' })
    expect(await calls('mget')).toBe(before)
    // A copy of its own each time: a caller changing one changes nothing for the next.
    again!.reason = 'changed by a caller'
    expect((await store.getMany([ending!.id]))[0]!.reason).toBe('completed')
    // A task not ended is read as stored, beside the ended one.
    const both = await store.getMany([other!.id, ending!.id])
    expect(both.map((task) => `${task.id}:${task.state}`)).toEqual(['other:PENDING', 'ending:COMPLETED'])
    expect(await calls('mget')).toBe(before + 1)
  } finally {
    await store.close()
  }
}, 30_000)

test('a completion makes the dependents it knows ready in its own script; one moved meanwhile, or still waiting, is left', async () => {
  const prefix = `readied${process.pid}`
  const store = new RedisTaskStore({ redis: new Redis(fixture.redisUrl), prefix, ownsConnection: true })
  const stored = async (id: string) => JSON.parse((await peek.get(`${prefix}:task:${id}`))!) as { ready: boolean; state: string }
  try {
    const waiting = { ready: false, request: { language: 'javascript' as const, code: '2' } }
    await store.insert(
      [
        storedTask({ id: 'first' }),
        storedTask({ id: 'elsewhere' }),
        storedTask({ id: 'next', dependencies: ['first'], ...waiting }),
        storedTask({ id: 'both', dependencies: ['first', 'elsewhere'], ...waiting }),
        storedTask({ id: 'moved', dependencies: ['first'], ...waiting }),
      ],
      'submitted',
    )
    // Another process suspends `moved`: this store's copy of it is stale now.
    const other = new RedisTaskStore({ redis: new Redis(fixture.redisUrl), prefix, ownsConnection: true })
    await other.transition('moved', ['PENDING'], { to: 'SUSPENDED', reason: 'suspended by the caller' })
    await other.close()
    await store.transitions(
      'first',
      ['PENDING'],
      [
        { to: 'SPAWNING', reason: 'claimed' },
        { to: 'RUNNING', reason: 'started' },
      ],
    )
    // Announced on the store's connection right behind the end's script (the driver's dispatcher does so): a read sent
    // there as the announcement finds the task ready already.
    const heard: unknown[] = []
    store.announceBehind = async (task) => {
      heard.push({ id: task.id, ready: task.ready, stored: JSON.parse((await store.connection.get(`${prefix}:task:${task.id}`))!).ready })
    }
    const ended = await store.transition('first', ['RUNNING'], { to: 'COMPLETED', reason: 'completed' })
    expect(heard).toContainEqual({ id: 'next', ready: true, stored: true })
    // `moved` was announced too (this store's copy said it would be made ready): taken and dropped, as any stale one.
    // Only what the write made ready counts as announced; the rest is the scheduler's to look at.
    expect(heard).toHaveLength(2)
    expect(ended?.announced).toEqual(['next'])
    // Written ready by the end's script, and answered so: no write of its own follows.
    expect(await stored('next')).toMatchObject({ state: 'PENDING', ready: true })
    expect(ended?.dependents?.find((task) => task.id === 'next')).toMatchObject({ state: 'PENDING', ready: true })
    // Still waiting on `elsewhere`, and moved by another process: the scheduler's look decides (TaskTransitions.afterEnd).
    expect(await stored('both')).toMatchObject({ state: 'PENDING', ready: false })
    expect(await stored('moved')).toMatchObject({ state: 'SUSPENDED', ready: false })
    expect(ended?.dependents?.find((task) => task.id === 'moved')).toMatchObject({ state: 'SUSPENDED', ready: false })
    // The dependent's copy here is the one written: its claim lands on it without a read.
    expect(store.cached('next')).toMatchObject({ ready: true })
  } finally {
    await store.close()
  }
}, 30_000)

test('a new plan’s insert and its steps’ insert leave together on the task store’s connection, the plan landing first', async () => {
  const settings = { dataDir: fixture.dataDir, redisUrl: fixture.redisUrl, redisPrefix: `plans${process.pid}`, leaseMs: 30_000 }
  const tasks = REDIS_DRIVER.tasks(settings)
  const [wired, alone] = [REDIS_DRIVER.plans(settings, tasks), REDIS_DRIVER.plans(settings)]
  expect([wired.insertLandsBeforeTasks, alone.insertLandsBeforeTasks]).toEqual([true, false])
  await Promise.all([wired.close(), alone.close(), tasks.close()])
  // Through the execgate's own wiring: what its task store's connection sends and answers, in order.
  const connection = (fixture.execgate.tasks.scheduler.store as RedisTaskStore).connection
  const seen: string[] = []
  const send = connection.sendCommand.bind(connection)
  const watched = (command: { name: string; args: unknown[]; promise: Promise<unknown> }) => {
    const what = `${command.name} ${
      String(command.args[2] ?? '')
        .split(':')
        .slice(-2, -1)[0] ?? ''
    }`
    seen.push(`> ${what}`)
    command.promise.then(
      () => seen.push(`< ${what}`),
      () => undefined,
    )
  }
  connection.sendCommand = ((command: Parameters<typeof send>[0], ...rest: unknown[]) => {
    watched(command as never)
    return (send as (...args: unknown[]) => unknown)(command, ...rest)
  }) as typeof connection.sendCommand
  try {
    const plan = await fixture.execgate.plans.run({
      steps: [
        { id: 'a', language: 'javascript', code: '20' },
        { id: 'b', language: 'javascript', code: 'JSON.parse(await read_file("steps/a/value.json")) + 1', dependsOn: ['a'] },
      ],
    })
    const done = await fixture.execgate.plans.wait(plan.id)
    expect(done.state).toBe('COMPLETED')
    expect(done.steps.map((step) => `${step.id}:${step.attempts}:${JSON.stringify(step.result?.value)}`)).toEqual(['a:1:20', 'b:1:21'])
    // The plan's insert (its keys under `plans:plan:`), then the steps' (an EVAL of the task store's), both sent before
    // the first of them is answered.
    const planInsert = seen.indexOf('> eval plan')
    expect(planInsert).toBeGreaterThanOrEqual(0)
    const stepsInsert = seen.findIndex((entry, index) => index > planInsert && entry.startsWith('> eval'))
    expect(stepsInsert).toBeGreaterThan(planInsert)
    expect(seen.indexOf('< eval plan')).toBeGreaterThan(stepsInsert)
  } finally {
    connection.sendCommand = send as typeof connection.sendCommand
  }
}, 60_000)
