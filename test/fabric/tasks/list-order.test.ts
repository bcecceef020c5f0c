import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { RedisTaskStore, SqliteTaskStore, type TaskStore } from '../../../src/fabric/tasks'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'
import { storedTask } from '../stored-records'

/**
 * `list` in submission order (the default) and newest first (`order: 'newest'`, what the console's Tasks page shows),
 * paged by cursor and filtered, on both stores: the embedded SQLite file and a real redis-server.
 */

const taskOf = (id: string, tenant: string) => storedTask({ id, tenant })

async function pages(store: TaskStore, filter: Omit<Parameters<TaskStore['list']>[0], 'cursor'>): Promise<string[][]> {
  const out: string[][] = []
  let cursor: string | undefined
  do {
    const page = await store.list({ ...filter, ...(cursor ? { cursor } : {}) })
    out.push(page.tasks.map((task) => task.id))
    cursor = page.nextCursor
  } while (cursor)
  return out
}

function describeOrder(kind: string, open: () => Promise<{ store: TaskStore; close(): Promise<void> }>) {
  describe(`${kind} store: list order`, () => {
    let store: TaskStore
    let close: () => Promise<void>
    const mine = Array.from({ length: 7 }, (_, index) => `t-${index + 1}`)
    beforeAll(async () => {
      ;({ store, close } = await open())
      // Interleaved with another tenant's, which no listing of acme's may show.
      for (const [index, id] of mine.entries())
        await store.insert([taskOf(id, 'acme'), ...(index % 3 === 0 ? [taskOf(`other-${index}`, 'globex')] : [])], 'submitted')
      for (const id of ['t-2', 't-5', 't-6'])
        await store.transition(id, ['PENDING'], { to: 'SUSPENDED', reason: 'suspended by the caller' })
    }, 30_000)
    afterAll(() => close())

    test('oldest first by default, newest first on request, each paged by its cursor', async () => {
      expect(await pages(store, { tenant: 'acme', limit: 3 })).toEqual([['t-1', 't-2', 't-3'], ['t-4', 't-5', 't-6'], ['t-7']])
      expect(await pages(store, { tenant: 'acme', limit: 3, order: 'newest' })).toEqual([
        ['t-7', 't-6', 't-5'],
        ['t-4', 't-3', 't-2'],
        ['t-1'],
      ])
    })

    test('newest first with a state filter, across pages', async () => {
      expect(await pages(store, { tenant: 'acme', limit: 2, order: 'newest', state: 'SUSPENDED' })).toEqual([['t-6', 't-5'], ['t-2']])
      expect(await pages(store, { tenant: 'globex', order: 'newest' })).toEqual([['other-6', 'other-3', 'other-0']])
    })
  })
}

describeOrder('sqlite', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-list-order-'))
  const store = new SqliteTaskStore({ file: path.join(dir, 'tasks.sqlite') })
  return { store, close: async () => (await store.close(), fs.rmSync(dir, { recursive: true, force: true })) }
})

let redis: RedisServer | undefined
describeOrder('redis', async () => {
  redis = await startRedisServer()
  const store = new RedisTaskStore({ redis: new Redis(redis.url), ownsConnection: true, prefix: 'list-order' })
  return { store, close: async () => (await store.close(), await redis?.stop()) }
})
