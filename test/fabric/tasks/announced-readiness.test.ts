import { Redis } from 'ioredis'
import { BullmqDispatcher, RedisTaskStore } from '../../../src/fabric/tasks'
import { redisExecgate } from '../redis-execgate'
import { storedTask } from '../stored-records'

/**
 * On Redis a dependent is announced beside its readiness write, not after it (task-transitions.ts, refreshReadiness), so
 * a process may take the announcement before the write lands. Here the write never comes, as if its announcer died
 * between the two: another process (a store and a dispatcher of their own on the same Redis and queue) stores the
 * dependent not ready and announces it. The execgate that takes the announcement finds the dependency completed, makes
 * the task ready itself and runs it, once. A real redis-server on loopback, BullMQ, quickjs.
 */

const fixture = redisExecgate('announced')

test('an announcement taken before its readiness write landed runs the task once its dependencies completed', async () => {
  const first = await fixture.execgate.tasks.wait(
    (await fixture.execgate.tasks.submit({ request: { language: 'javascript', code: '20' } })).id,
  )
  expect(first.state).toBe('COMPLETED')
  // Another process, on the same keys and queue as the execgate (the default prefix).
  const store = new RedisTaskStore({ redis: new Redis(fixture.redisUrl), prefix: 'execgate:tasks', ownsConnection: true })
  const announcer = new BullmqDispatcher({ url: fixture.redisUrl, queue: 'execgate-tasks' })
  try {
    // Its readiness write never landed.
    const dependent = storedTask({
      id: `late-ready-${process.pid}`,
      tenant: first.tenant,
      request: { language: 'javascript', code: '21' },
      dependencies: [first.id],
      ready: false,
    })
    await store.insert([dependent], 'submitted')
    await announcer.dispatch({ ...dependent, ready: true })
    const done = await fixture.execgate.tasks.scheduler.wait(dependent.id, 20_000)
    expect(done).toMatchObject({ state: 'COMPLETED', ready: true, attempts: 1, result: { status: 'ok', value: 21 } })
    expect((await store.events(dependent.id)).map((event) => event.to)).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'COMPLETED'])
  } finally {
    await announcer.close()
    await store.close()
  }
}, 60_000)

test('an announced task whose dependencies have not all completed is not made ready, and does not run', async () => {
  const store = new RedisTaskStore({ redis: new Redis(fixture.redisUrl), prefix: 'execgate:tasks', ownsConnection: true })
  const announcer = new BullmqDispatcher({ url: fixture.redisUrl, queue: 'execgate-tasks' })
  try {
    const busy = 'const t = Date.now(); while (Date.now() - t < 1500) {}; 1'
    const blocker = await fixture.execgate.tasks.submit({ request: { language: 'javascript', code: busy } })
    const waiting = storedTask({
      id: `not-ready-${process.pid}`,
      tenant: blocker.tenant,
      request: { language: 'javascript', code: '2' },
      dependencies: [blocker.id],
      ready: false,
    })
    await store.insert([waiting], 'submitted')
    // A wrong announcement (its dependency still running): taken and dropped, the task left to its dependency's end.
    await announcer.dispatch({ ...waiting, ready: true })
    for (let waited = 0; ; waited += 20) {
      // Read before the blocker: while the blocker is not done, this read was made before it was.
      const state = (await store.get(waiting.id))?.state
      if ((await store.get(blocker.id))?.state === 'COMPLETED') break
      expect(state).toBe('PENDING')
      if (waited > 20_000) throw new Error('the blocker did not complete')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    // Its dependency's end made it ready and announced it (the dependents set was written by the insert).
    expect(await fixture.execgate.tasks.scheduler.wait(waiting.id, 20_000)).toMatchObject({ state: 'COMPLETED', attempts: 1 })
  } finally {
    await announcer.close()
    await store.close()
  }
}, 60_000)
