import { SqliteTaskStore, type Task } from '../../src/fabric/tasks'
import { storedTask } from './stored-records'

/**
 * The SQLite task store's starts inside the writes that make a task due (docs/tasks.md, "A chain's steps start inside
 * the writes that make them due"): a submit's insert, a batch's, and a completion's for the dependents it makes ready.
 * Each only when no due task comes first in the due order.
 */

// One millisecond for all: the order may not depend on the clock.
const at = new Date().toISOString()
/** A claim for this process and its start: what the scheduler asks a start inside a write to apply. */
const changes = [
  { to: 'SPAWNING' as const, reason: 'attempt 1 of 3', patch: { attempts: 1, owner: 'here' } },
  { to: 'RUNNING' as const, reason: 'started' },
]
const taskOf = (id: string, priority: number) => storedTask({ id, priority, tenant: id.startsWith('g') ? 'globex' : 'acme' }, at)

test('a submit starts its task in the same write only when no due task comes first', async () => {
  // insertAndStart: the new task is last among equals in the due order, so a due task of its priority or higher keeps
  // it PENDING (stored, its submission logged, nothing started); one due later (a backoff) or lower does not.
  const store = new SqliteTaskStore({ file: ':memory:' })
  const now = Date.now()
  try {
    await store.insert([taskOf('due-5', 5), storedTask({ id: 'later-9', priority: 9, notBefore: now + 60_000 }, at)], 'submitted')
    const behind = await store.insertAndStart([taskOf('new-5', 5)], 'submitted', now, { id: 'new-5', changes })
    expect(behind.started).toBeUndefined()
    expect(await store.get('new-5')).toMatchObject({ state: 'PENDING', attempts: 0 })
    expect((await store.events('new-5')).map((event) => event.to)).toEqual(['PENDING'])
    const first = await store.insertAndStart([taskOf('new-6', 6)], 'submitted', now, { id: 'new-6', changes })
    expect(first.started?.task).toMatchObject({ state: 'RUNNING', attempts: 1, owner: 'here' })
    expect(await store.get('new-6')).toMatchObject({ state: 'RUNNING', attempts: 1 })
    expect((await store.events('new-6')).map((event) => event.to)).toEqual(['PENDING', 'SPAWNING', 'RUNNING'])
    // The due order is as it was: the one started is not in it, the one kept behind is, after its elder.
    expect((await store.due(now, 10)).map((task) => task.id)).toEqual(['due-5', 'new-5'])
  } finally {
    await store.close()
  }
})

test("a batch's insert starts the task it names only when no due task comes first, its batch's included", async () => {
  const store = new SqliteTaskStore({ file: ':memory:' })
  const now = Date.now()
  try {
    await store.insert([taskOf('due-5', 5)], 'submitted')
    // Above every due task: started in the insert, the batch stored around it in its order.
    const batch = [taskOf('x-low', 0), taskOf('x-6', 6), { ...taskOf('x-after', 0), dependencies: ['x-6'], ready: false }]
    const first = await store.insertAndStart(batch, 'submitted', now, { id: 'x-6', changes })
    expect(first.tasks.map((task) => [task.id, task.state])).toEqual([
      ['x-low', 'PENDING'],
      ['x-6', 'PENDING'],
      ['x-after', 'PENDING'],
    ])
    expect(first.started?.task).toMatchObject({ id: 'x-6', state: 'RUNNING', attempts: 1, owner: 'here' })
    expect((await store.events('x-6')).map((event) => event.to)).toEqual(['PENDING', 'SPAWNING', 'RUNNING'])
    expect((await store.dependentsOf('x-6')).map((task) => task.id)).toEqual(['x-after'])
    // Behind a due task of its priority from its own batch, inserted before it: stored, not started.
    const behind = await store.insertAndStart([taskOf('y-7a', 7), taskOf('y-7b', 7)], 'submitted', now, { id: 'y-7b', changes })
    expect(behind.started).toBeUndefined()
    expect((await store.events('y-7b')).map((event) => event.to)).toEqual(['PENDING'])
    expect((await store.due(now, 10)).map((task) => task.id)).toEqual(['y-7a', 'y-7b', 'due-5', 'x-low'])
  } finally {
    await store.close()
  }
})

test('a completion starts a dependent it makes ready in its own write, in the due order, none overtaken', async () => {
  // startInside is the scheduler's (without a dispatcher): here the test's, answering a claim and start for each.
  const store = new SqliteTaskStore({ file: ':memory:' })
  const asked: string[] = []
  const begun: string[] = []
  const released: string[] = []
  let refuse = new Set<string>()
  store.startInside = (task, inputs, ending) => {
    asked.push(`${task.id} after ${ending.id} with ${inputs.map((input) => `${input.id}:${input.state}`).join(',')}`)
    if (refuse.has(task.id)) return undefined
    return {
      changes: [
        { to: 'SPAWNING', reason: 'attempt 1 of 3', patch: { attempts: 1, owner: 'here' }, claimOf: { attempts: 0, now: Date.now() } },
        { to: 'RUNNING', reason: 'started' },
      ],
      begin: (started) => begun.push(started.task.id),
      release: () => released.push(task.id),
    }
  }
  const waiting = (id: string, dependencies: string[], fields: Partial<Task> = {}) => ({
    ...taskOf(id, 0),
    dependencies,
    ready: false,
    ...fields,
  })
  const end = (id: string) => store.transition(id, ['RUNNING'], { to: 'COMPLETED', reason: 'completed' })
  try {
    await store.insert([taskOf('a', 0), taskOf('x', 0)], 'submitted')
    await store.insert(
      [
        waiting('b', ['a']),
        waiting('both', ['a', 'x']),
        // Another tenant's task naming a's id (its batch's a was answered by a key): a's end is nothing to it.
        waiting('g-other', ['a']),
        waiting('b-high', ['a'], { priority: 3 }),
      ],
      'submitted',
    )
    for (const id of ['a', 'x']) await store.transition(id, ['PENDING'], { to: 'RUNNING', reason: 'started' })
    const ended = await end('a')
    // b-high first (the due order), then b; not `both` (x still runs) nor the other tenant's.
    expect(asked).toEqual(['b-high after a with a:COMPLETED', 'b after a with a:COMPLETED'])
    expect(ended?.started?.map((start) => start.id)).toEqual(['b-high', 'b'])
    expect(begun).toEqual([])
    for (const start of ended!.started!) start.begin()
    expect(begun).toEqual(['b-high', 'b'])
    expect(await store.get('b')).toMatchObject({ state: 'RUNNING', ready: true, attempts: 1, owner: 'here' })
    expect(await store.get('both')).toMatchObject({ state: 'PENDING', ready: false })
    expect(await store.get('g-other')).toMatchObject({ state: 'PENDING', ready: false })
    // In the log: a's end, then each start (claim and start, no readiness entry), in that write's order.
    const seqs = async (id: string) => (await store.events(id)).map((event) => [event.to, event.seq])
    const aEnd = (await store.events('a')).at(-1)!.seq
    expect(await seqs('b-high')).toEqual([
      ['PENDING', expect.any(Number)],
      ['SPAWNING', aEnd + 1],
      ['RUNNING', aEnd + 2],
    ])
    expect(await seqs('b')).toEqual([
      ['PENDING', expect.any(Number)],
      ['SPAWNING', aEnd + 3],
      ['RUNNING', aEnd + 4],
    ])

    // A due task ahead in the due order (a higher priority): no dependent of x's end is asked, none started.
    await store.insert([taskOf('due-high', 5)], 'submitted')
    asked.length = 0
    expect((await end('x'))?.started).toBeUndefined()
    expect(asked).toEqual([])
    expect(await store.get('both')).toMatchObject({ state: 'PENDING', ready: false, attempts: 0 })

    // Refused by the scheduler (no slot): it and every dependent after it in the due order are left as they were.
    await store.insert([taskOf('c', 0), waiting('c1', ['c'], { priority: 1 }), waiting('c2', ['c'])], 'submitted')
    await store.transition('due-high', ['PENDING'], { to: 'RUNNING', reason: 'started' })
    await store.transition('c', ['PENDING'], { to: 'RUNNING', reason: 'started' })
    refuse = new Set(['c1'])
    asked.length = 0
    expect((await end('c'))?.started).toBeUndefined()
    expect(asked).toEqual(['c1 after c with c:COMPLETED'])
    expect(await store.get('c2')).toMatchObject({ state: 'PENDING', ready: false })
    expect(released).toEqual([])
  } finally {
    await store.close()
  }
})

test("several tasks' logs read at once are each task's own log after its own seq, as read one by one", async () => {
  const store = new SqliteTaskStore({ file: ':memory:' })
  const ids = Array.from({ length: 20 }, (_, index) => `log-${index}`)
  try {
    // More than one statement's worth (16 logs a statement), the logs interleaved in the file.
    await store.insert(
      ids.map((id) => taskOf(id, 0)),
      'submitted',
    )
    for (const id of ids) await store.transition(id, ['PENDING'], { to: 'SUSPENDED', reason: `held ${id}` })
    for (const id of ids.slice(0, 10)) await store.transition(id, ['SUSPENDED'], { to: 'PENDING', reason: `resumed ${id}` })
    const firstOf = new Map(await Promise.all(ids.map(async (id) => [id, (await store.events(id))[0]!.seq] as const)))
    const afterSeq = new Map(ids.map((id, index) => [id, index % 2 === 0 ? 0 : firstOf.get(id)!]))
    afterSeq.set('no-such-task', 0)
    const together = await store.eventsOfMany(afterSeq)
    expect([...together.keys()]).toEqual([...afterSeq.keys()])
    for (const [id, after] of afterSeq) expect(together.get(id)).toEqual(await store.events(id, after))
    expect(together.get('log-0')!.map((event) => event.to)).toEqual(['PENDING', 'SUSPENDED', 'PENDING'])
    expect(together.get('log-11')!.map((event) => event.to)).toEqual(['SUSPENDED'])
    expect(together.get('no-such-task')).toEqual([])
  } finally {
    await store.close()
  }
})
