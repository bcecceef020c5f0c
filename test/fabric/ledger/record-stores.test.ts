import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { RedisLedgerStore, SqliteLedgerStore, type LedgerRecordStore, type RecordDraft, type RunRecord } from '../../../src/fabric/ledger'
import { verifyChain } from '../../../src/fabric/ledger/chain'
import { sha256 } from '../../../src/fabric/ledger/run-capture'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'

/**
 * The record store contract, one suite for both stores: a real SQLite file in a temp dir, and a real redis-server on a
 * loopback port. Chains per tenant, idempotent appends, tenant-scoped indexes, tamper detection (each store's rows
 * edited behind its back), retention's prefix removal with its checkpoint, and records surviving a reopen.
 */

// Both stores always: without redis-server the Redis half fails with the command that installs it (never skipped).
const kinds = ['sqlite', 'redis'] as const

function ref(path: string, content: string) {
  return { path, sha256: sha256(content), size: Buffer.byteLength(content), mediaType: 'text/plain' }
}

function draft(tenant: string, runId: string, files: { inputs?: string[]; outputs?: string[]; code?: string } = {}): RecordDraft {
  const entry: RunRecord = {
    kind: 'run',
    runId,
    traceId: runId,
    tenant,
    adapter: 'quickjs',
    execgateVersion: 'test',
    code: { ...ref('code', files.code ?? `code of ${runId}`), mediaType: 'text/javascript' },
    startedAt: new Date().toISOString(),
    endedAt: new Date().toISOString(),
    status: 'ok',
    wallMs: 1,
    inputs: (files.inputs ?? []).map((content, index) => ref(`in${index}.txt`, content)),
    outputs: (files.outputs ?? []).map((content, index) => ref(`out${index}.txt`, content)),
    stdout: { sha256: sha256(''), size: 0, stored: false },
    stderr: { sha256: sha256(''), size: 0, stored: false },
  }
  return { tenant, id: runId, recordedAt: Date.now(), entry }
}

describe.each(kinds)('%s ledger store', (kind) => {
  let dataDir: string
  let redis: RedisServer | undefined
  let store: LedgerRecordStore
  let prefix = 0
  let connections: Redis[] = []

  const open = (name = 'ledger'): LedgerRecordStore => {
    if (kind === 'sqlite') return new SqliteLedgerStore({ file: path.join(dataDir, `${name}.sqlite`) })
    const connection = new Redis(redis!.url)
    return new RedisLedgerStore({ redis: connection, prefix: `test${prefix}:${name}`, ownsConnection: true })
  }

  /** Changes the stored record behind the store's back: `edit` its body, or `delete` it. */
  async function tamper(name: string, tenant: string, seq: number, change: 'edit' | 'rehash' | 'delete'): Promise<void> {
    if (kind === 'sqlite') {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const Database = require('libsql')
      const db = new Database(path.join(dataDir, `${name}.sqlite`))
      if (change === 'delete') db.prepare('DELETE FROM ledger_records WHERE tenant = ? AND seq = ?').run(tenant, seq)
      else {
        const row = db.prepare('SELECT body FROM ledger_records WHERE tenant = ? AND seq = ?').get(tenant, seq) as { body: string }
        const body = row.body.replace('"status":"ok"', '"status":"error"')
        db.prepare('UPDATE ledger_records SET body = ?, hash = CASE WHEN ? THEN ? ELSE hash END WHERE tenant = ? AND seq = ?').run(
          body,
          change === 'rehash' ? 1 : 0,
          sha256(body),
          tenant,
          seq,
        )
      }
      db.close()
      return
    }
    const connection = new Redis(redis!.url)
    connections.push(connection)
    const key = `test${prefix}:${name}:records:${tenant}`
    if (change === 'delete') await connection.hdel(key, String(seq))
    else {
      const value = JSON.parse((await connection.hget(key, String(seq)))!) as { id: string; hash: string; body: string }
      value.body = value.body.replace('"status":"ok"', '"status":"error"')
      if (change === 'rehash') value.hash = sha256(value.body)
      await connection.hset(key, String(seq), JSON.stringify(value))
    }
  }

  const verify = async (target: LedgerRecordStore, tenant: string) =>
    verifyChain({
      tenant,
      head: await target.head(tenant),
      checkpoint: await target.checkpoint(tenant),
      page: (after, limit) => target.page(tenant, after, limit),
    })

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-ledger-store-'))
    if (kind === 'redis') redis = await startRedisServer()
  })
  beforeEach(() => {
    prefix++
    store = open()
  })
  afterEach(async () => {
    await store.close()
    await Promise.all(connections.map((connection) => connection.quit()))
    connections = []
    if (kind === 'sqlite') for (const file of fs.readdirSync(dataDir)) fs.rmSync(path.join(dataDir, file), { force: true })
  })
  afterAll(async () => {
    await redis?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  test('each tenant has its own chain: seq from 1, each record carrying the hash of the one before', async () => {
    const stored = await store.append([draft('a', 'r1'), draft('b', 'r2'), draft('a', 'r3')])
    expect(stored.map((record) => [record.tenant, record.seq])).toEqual([
      ['a', 1],
      ['b', 1],
      ['a', 2],
    ])
    expect(JSON.parse(stored[2]!.body).prevHash).toBe(stored[0]!.hash)
    expect(JSON.parse(stored[0]!.body).prevHash).toBe('')
    expect(stored.every((record) => record.hash === sha256(record.body))).toBe(true)
    expect(await store.head('a')).toEqual({ seq: 2, hash: stored[2]!.hash })
    expect(await store.tenants()).toEqual(['a', 'b'])
    expect(await verify(store, 'a')).toMatchObject({ ok: true, records: 2 })
  })

  test('a policy appended with the records naming it is read back by digest, stored once, and outlives retention', async () => {
    const text = '{"memoryMb":128,"network":"none"}'
    const policy = { sha256: sha256(text), text }
    expect(await store.policy(policy.sha256)).toBeUndefined()
    await store.append([draft('a', 'r1'), draft('b', 'r2')], { policies: [policy] })
    await store.append([draft('a', 'r3')], { policies: [policy, { sha256: policy.sha256, text: 'not the same' }] })
    // The first text a digest was stored with stands; another tenant's records find it too.
    expect(await store.policy(policy.sha256)).toBe(text)
    expect(await store.policy(sha256('other'))).toBeUndefined()
    await store.removeThrough('a', 2)
    expect(await store.policy(policy.sha256)).toBe(text)
  })

  test('an id the tenant already has is not appended again', async () => {
    const [first] = await store.append([draft('a', 'same')])
    const [again] = await store.append([draft('a', 'same')])
    expect(again).toEqual(first)
    expect((await store.page('a', 0, 10)).length).toBe(1)
    // Another tenant may use the same id: its own record.
    expect((await store.append([draft('b', 'same')]))[0]!.seq).toBe(1)
  })

  test('a batch larger than one INSERT, not answered, repeating a stored id late in it: each record once, in order', async () => {
    await store.append([draft('a', 'r35')])
    const drafts = Array.from({ length: 40 }, (_, index) => draft('a', `r${index}`))
    // As the ledger's writer does: each draft makes its entry's JSON when the store chains it.
    let made = 0
    for (const each of drafts) {
      each.entryJson = () => {
        made++
        return JSON.stringify(each.entry)
      }
    }
    await store.append(drafts, { answer: false })
    const page = await store.page('a', 0, 100)
    expect(page.map((record) => record.id)).toEqual(['r35', ...drafts.map((each) => each.id).filter((id) => id !== 'r35')])
    expect(page.map((record) => record.seq)).toEqual(Array.from({ length: 40 }, (_, index) => index + 1))
    expect(made).toBeGreaterThanOrEqual(39)
    expect(JSON.parse(page[1]!.body).entry).toEqual(drafts[0]!.entry)
    expect(await verify(store, 'a')).toMatchObject({ ok: true, records: 40 })
    expect(await store.linkedSeqs('a', [sha256('code of r39')], 'used')).toEqual([40])
  })

  test("reads are the tenant's own: ids, artifacts and links of another tenant are not there", async () => {
    await store.append([draft('a', 'r1', { inputs: ['shared input'], outputs: ['a result'] }), draft('b', 'r2', { outputs: ['b result'] })])
    expect(await store.byId('b', 'r1')).toBeUndefined()
    expect((await store.byId('a', 'r1'))?.seq).toBe(1)
    expect(await store.artifact('a', sha256('a result'))).toMatchObject({ role: 'output', path: 'out0.txt', size: 8 })
    expect(await store.artifact('b', sha256('a result'))).toBeUndefined()
    expect(await store.linkedSeqs('a', [sha256('shared input')], 'used')).toEqual([1])
    expect(await store.linkedSeqs('a', [sha256('a result')], 'generated')).toEqual([1])
    expect(await store.linkedSeqs('b', [sha256('a result')], 'generated')).toEqual([])
  })

  test('verify finds an edited record, a re-hashed one, a deleted one and a deleted last one', async () => {
    const fill = async (name: string) => {
      const target = open(name)
      await target.append(['r1', 'r2', 'r3', 'r4'].map((id) => draft('a', id)))
      return target
    }
    const edited = await fill('edited')
    await tamper('edited', 'a', 2, 'edit')
    expect(await verify(edited, 'a')).toMatchObject({
      ok: false,
      records: 1,
      broken: { seq: 2, id: 'r2', reason: expect.stringMatching(/does not match its hash/) },
    })
    const rehashed = await fill('rehashed')
    await tamper('rehashed', 'a', 2, 'rehash')
    expect(await verify(rehashed, 'a')).toMatchObject({
      ok: false,
      broken: { seq: 3, reason: expect.stringMatching(/prevHash does not match the hash of record 2/) },
    })
    const deleted = await fill('deleted')
    await tamper('deleted', 'a', 3, 'delete')
    expect(await verify(deleted, 'a')).toMatchObject({
      ok: false,
      broken: { seq: 3, reason: expect.stringMatching(/record 3 is missing/) },
    })
    const truncated = await fill('truncated')
    await tamper('truncated', 'a', 4, 'delete')
    expect(await verify(truncated, 'a')).toMatchObject({ ok: false, broken: { seq: 4, reason: expect.stringMatching(/missing/) } })
    await Promise.all([edited, rehashed, deleted, truncated].map((target) => target.close()))
  })

  test('removing a prefix keeps a checkpoint: the rest still verifies, new records follow the head', async () => {
    const stored = await store.append([
      draft('a', 'r1', { outputs: ['old only'] }),
      draft('a', 'r2', { outputs: ['kept'] }),
      draft('a', 'r3', { inputs: ['kept'] }),
      draft('b', 'b1', { outputs: ['old only'] }),
    ])
    expect(await store.tenantBytes('a')).toBe(
      Buffer.byteLength('old only') +
        Buffer.byteLength('kept') +
        ['r1', 'r2', 'r3'].reduce((sum, id) => sum + Buffer.byteLength(`code of ${id}`), 0),
    )
    const removed = await store.removeThrough('a', 2)
    expect(removed).toEqual(expect.arrayContaining([sha256('old only'), sha256('kept'), sha256('code of r1')]))
    expect(await store.checkpoint('a')).toEqual({ seq: 2, hash: stored[1]!.hash })
    expect(await store.byId('a', 'r1')).toBeUndefined()
    // Still referenced: by a's r3 (kept), and by b's record.
    expect(await store.referenced(sha256('kept'))).toBe(true)
    expect(await store.referenced(sha256('old only'))).toBe(true)
    expect(await store.referenced(sha256('code of r1'))).toBe(false)
    expect(await store.artifact('a', sha256('old only'))).toBeUndefined()
    expect(await verify(store, 'a')).toMatchObject({ ok: true, records: 1, checkpoint: { seq: 2 } })
    const [next] = await store.append([draft('a', 'r4')])
    expect(next!.seq).toBe(4)
    expect(await verify(store, 'a')).toMatchObject({ ok: true, records: 2 })
  })

  test('what was appended is there after closing and opening the store again', async () => {
    await store.append([draft('a', 'r1', { outputs: ['x'] }), draft('a', 'r2')])
    await store.close()
    store = open()
    expect((await store.byId('a', 'r2'))?.seq).toBe(2)
    expect(await store.linkedSeqs('a', [sha256('x')], 'generated')).toEqual([1])
    expect(await verify(store, 'a')).toMatchObject({ ok: true, records: 2 })
  })

  test('two connections appending at once keep one unbroken chain', async () => {
    const other = open()
    await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => store.append([draft('a', `x${i}`)])),
      ...Array.from({ length: 20 }, (_, i) => other.append([draft('a', `y${i}`)])),
    ])
    expect(await verify(store, 'a')).toMatchObject({ ok: true, records: 40 })
    await other.close()
  })
})

describe('a deployment on the redis fabric', () => {
  let redis: RedisServer
  let dataDir: string
  beforeAll(async () => {
    redis = await startRedisServer()
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-ledger-redis-'))
  })
  afterAll(async () => {
    await redis.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  test("records every node's runs in the one Redis (fabric.ledger.store auto), where any node reads them", async () => {
    const { createExecgate } = await import('../../../src')
    const env = {
      EXECGATE_LOG_LEVEL: 'silent',
      EXECGATE_READINESS_ENABLED: 'false',
      EXECGATE_EXECUTION_ENABLED: 'quickjs',
      EXECGATE_FABRIC_STORE: 'redis',
      EXECGATE_FABRIC_REDIS_URL: redis.url,
      EXECGATE_FABRIC_DATA_DIR: dataDir,
    }
    const [nodeA, nodeB] = await Promise.all([createExecgate({ env }), createExecgate({ env })])
    try {
      const ranOnA = await nodeA.execute({ language: 'javascript', code: '6 * 7' }, { tenant: 'acme' })
      // Each node writes from its own writer thread: A's record is in before B runs, so the chain's order is known.
      await nodeA.ledger.flush()
      const ranOnB = await nodeB.execute({ language: 'javascript', code: '6 * 7' }, { tenant: 'acme' })
      expect((await nodeB.ledger.record(ranOnA.runId!, { tenant: 'acme' })).seq).toBe(1)
      expect((await nodeA.ledger.record(ranOnB.runId!, { tenant: 'acme' })).seq).toBe(2)
      expect(await nodeA.ledger.verify({ tenant: 'acme' })).toMatchObject({ ok: true, records: 2 })
      expect(fs.existsSync(path.join(dataDir, 'ledger.sqlite'))).toBe(false)
    } finally {
      await Promise.all([nodeA.dispose(), nodeB.dispose()])
    }
  })
})
