import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Redis } from 'ioredis'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'
import { RedisUploadIndex, SqliteUploadIndex, type UploadIndex } from '../../../src/fabric/files'
import { interleavedSqlite } from '../interleaved-sqlite'

/**
 * The upload index's two drivers pass one suite: SQLite beside the blobs (one node) and Redis (every node of a
 * deployment). A real redis-server and a real SQLite file.
 */

const sha = (n: number) => n.toString(16).padStart(64, '0')
let redis: RedisServer
let folder: string
beforeAll(async () => {
  redis = await startRedisServer()
  folder = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-upload-index-'))
}, 60_000)
afterAll(async () => {
  await redis?.stop()
  fs.rmSync(folder, { recursive: true, force: true })
})

const drivers: [string, () => UploadIndex][] = [
  ['sqlite', () => new SqliteUploadIndex(fs.mkdtempSync(path.join(folder, 'sqlite-')))],
  ['redis', () => new RedisUploadIndex(() => new Redis(redis.url), `test-${Math.random().toString(36).slice(2)}`)],
]

describe.each(drivers)('%s upload index', (_name, open) => {
  let index: UploadIndex
  beforeEach(() => (index = open()))
  afterEach(() => index.close())

  test('adds within the quota, once per digest; lists, finds and counts per tenant', async () => {
    expect(await index.add('acme', { sha256: sha(1), bytes: 60, createdAt: 1000 }, 100)).toBe('added')
    expect(await index.add('acme', { sha256: sha(1), bytes: 60, createdAt: 2000 }, 100)).toBe('held')
    expect(await index.add('acme', { sha256: sha(2), bytes: 41, createdAt: 3000 }, 100)).toBe('quota')
    expect(await index.add('acme', { sha256: sha(2), bytes: 40, createdAt: 3000 }, 100)).toBe('added')
    expect(await index.used('acme')).toBe(100)
    expect(await index.list('acme')).toEqual([
      { sha256: sha(1), bytes: 60, createdAt: 1000 },
      { sha256: sha(2), bytes: 40, createdAt: 3000 },
    ])
    expect(await index.find('acme', sha(2))).toEqual({ sha256: sha(2), bytes: 40, createdAt: 3000 })
    expect(await index.find('globex', sha(2))).toBeUndefined()
    expect(await index.used('globex')).toBe(0)
  })

  test('removing frees the quota; the bytes are still held while another tenant holds the digest', async () => {
    await index.add('acme', { sha256: sha(3), bytes: 10, createdAt: 1 }, 100)
    await index.add('globex', { sha256: sha(3), bytes: 10, createdAt: 2 }, 100)
    expect(await index.heldByAnyone(sha(3))).toBe(true)
    expect(await index.remove('acme', sha(3))).toEqual({ removed: true, stillHeld: true })
    expect(await index.remove('acme', sha(3))).toEqual({ removed: false, stillHeld: true })
    expect(await index.used('acme')).toBe(0)
    expect(await index.remove('globex', sha(3))).toEqual({ removed: true, stillHeld: false })
    expect(await index.heldByAnyone(sha(3))).toBe(false)
  })

  test('concurrent adds cannot pass the quota together', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, n) => index.add('acme', { sha256: sha(100 + n), bytes: 30, createdAt: n }, 100)),
    )
    expect(outcomes.filter((outcome) => outcome === 'added')).toHaveLength(3)
    expect(await index.used('acme')).toBe(90)
  })
})

test("the SQLite index: another process's upload committed between the quota's read and the insert fails neither", async () => {
  // Several processes on one data dir (serve and workers): another one records an upload of the tenant while this one
  // is inside add(), after its read of the bytes used and before its insert. Begun deferred, add() then failed at its
  // insert (SQLITE_BUSY_SNAPSHOT); begun IMMEDIATE, the other waits for the write lock and lands after.
  const root = fs.mkdtempSync(path.join(folder, 'sqlite-interleaved-'))
  const sqlite = interleavedSqlite('SELECT COALESCE(SUM(bytes), 0) AS used FROM uploads WHERE tenant = ?')
  const index = new SqliteUploadIndex(root, sqlite.driver)
  try {
    expect(await index.add('acme', { sha256: sha(10), bytes: 10, createdAt: 1 }, 100)).toBe('added')
    const otherUpload = () =>
      sqlite
        .other(path.join(root, 'uploads.sqlite'))
        .prepare('INSERT INTO uploads (tenant, sha256, bytes, created_at) VALUES (?, ?, ?, ?)')
        .run('acme', sha(12), 50, 3)
    sqlite.arm(otherUpload)
    expect(await index.add('acme', { sha256: sha(11), bytes: 40, createdAt: 2 }, 100)).toBe('added')
    expect(sqlite.fired).toBe(true)
    expect(String(sqlite.refused)).toMatch(/busy|locked/i)
    otherUpload()
    expect((await index.list('acme')).map((upload) => upload.sha256)).toEqual([sha(10), sha(11), sha(12)])
  } finally {
    sqlite.close()
    await index.close()
  }
})
