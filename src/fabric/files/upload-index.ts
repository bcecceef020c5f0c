import path from 'node:path'
import type { Redis } from 'ioredis'
import { openSqlite, preparedTransaction, type Database, type SqliteDriver } from '../sqlite'

/**
 * Which tenant holds which upload, and how many bytes each holds: one interface, two drivers. SQLite beside the blobs
 * serves one node; Redis (`fabric.store: redis`) serves every node of a deployment, so a file uploaded through one
 * node is named by digest through any other. Adding is one step that checks the quota, so two uploads at once (on two
 * nodes too) cannot both take the last bytes.
 */

export interface IndexedUpload {
  sha256: string
  bytes: number
  /** Epoch ms. */
  createdAt: number
}

export type AddOutcome = 'added' | 'held' | 'quota'

export interface UploadIndex {
  find(tenant: string, sha256: string): Promise<IndexedUpload | undefined>
  list(tenant: string): Promise<IndexedUpload[]>
  used(tenant: string): Promise<number>
  /** Records the tenant's upload unless it holds it already, or unless it would pass `quotaBytes`. */
  add(tenant: string, upload: IndexedUpload, quotaBytes: number): Promise<AddOutcome>
  /** Whether any tenant holds the digest (bytes no tenant holds may go). */
  heldByAnyone(sha256: string): Promise<boolean>
  /** Forgets the tenant's upload; `stillHeld` when another tenant holds the same digest. */
  remove(tenant: string, sha256: string): Promise<{ removed: boolean; stillHeld: boolean }>
  close(): Promise<void>
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS uploads (
  tenant TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (tenant, sha256)
);
`

interface Row {
  sha256: string
  bytes: number
  created_at: number
}

const toUpload = (row: Row): IndexedUpload => ({ sha256: row.sha256, bytes: Number(row.bytes), createdAt: Number(row.created_at) })

/** `<root>/uploads.sqlite`, opened on first use: a process that never sees an upload never opens it. */
export class SqliteUploadIndex implements UploadIndex {
  private db?: Database
  private adding?: (tenant: string, upload: IndexedUpload, quotaBytes: number) => AddOutcome

  /** `driver`: the SQLite driver class (tests pass one that interleaves another process's write). @default libsql */
  constructor(
    private readonly root: string,
    private readonly driver?: SqliteDriver,
  ) {}

  private index(): Database {
    this.db ??= openSqlite(path.join(this.root, 'uploads.sqlite'), SCHEMA, this.driver)
    return this.db
  }

  async find(tenant: string, sha256: string): Promise<IndexedUpload | undefined> {
    const row = this.index().prepare('SELECT sha256, bytes, created_at FROM uploads WHERE tenant = ? AND sha256 = ?').get(tenant, sha256)
    return row ? toUpload(row as Row) : undefined
  }

  async list(tenant: string): Promise<IndexedUpload[]> {
    const rows = this.index()
      .prepare('SELECT sha256, bytes, created_at FROM uploads WHERE tenant = ? ORDER BY created_at, sha256')
      .all(tenant)
    return (rows as Row[]).map(toUpload)
  }

  async used(tenant: string): Promise<number> {
    const row = this.index().prepare('SELECT COALESCE(SUM(bytes), 0) AS used FROM uploads WHERE tenant = ?').get(tenant) as { used: number }
    return Number(row.used)
  }

  async add(tenant: string, upload: IndexedUpload, quotaBytes: number): Promise<AddOutcome> {
    const db = this.index()
    // One transaction, begun IMMEDIATE (the write lock first, as the task store's writes): the check and the insert see
    // the same rows. Begun deferred, another process's upload committed between the quota's read and the insert failed
    // this one at once (SQLITE_BUSY_SNAPSHOT: no busy wait helps a read another commit made stale).
    this.adding ??= preparedTransaction(db, (tenant: string, upload: IndexedUpload, quotaBytes: number): AddOutcome => {
      if (db.prepare('SELECT 1 FROM uploads WHERE tenant = ? AND sha256 = ?').get(tenant, upload.sha256)) return 'held'
      const { used } = db.prepare('SELECT COALESCE(SUM(bytes), 0) AS used FROM uploads WHERE tenant = ?').get(tenant) as { used: number }
      if (Number(used) + upload.bytes > quotaBytes) return 'quota'
      db.prepare('INSERT INTO uploads (tenant, sha256, bytes, created_at) VALUES (?, ?, ?, ?)').run(
        tenant,
        upload.sha256,
        upload.bytes,
        upload.createdAt,
      )
      return 'added'
    })
    return this.adding(tenant, upload, quotaBytes)
  }

  async heldByAnyone(sha256: string): Promise<boolean> {
    return !!this.index().prepare('SELECT 1 FROM uploads WHERE sha256 = ? LIMIT 1').get(sha256)
  }

  async remove(tenant: string, sha256: string): Promise<{ removed: boolean; stillHeld: boolean }> {
    const removed = this.index().prepare('DELETE FROM uploads WHERE tenant = ? AND sha256 = ?').run(tenant, sha256).changes > 0
    const stillHeld = !!this.index().prepare('SELECT 1 FROM uploads WHERE sha256 = ? LIMIT 1').get(sha256)
    return { removed, stillHeld }
  }

  async close(): Promise<void> {
    this.db?.close()
    this.db = undefined
    this.adding = undefined
  }
}

/** KEYS: the tenant's hash, its byte counter, the digest's holders; ARGV: sha256, bytes, createdAt, quota, tenant. */
const ADD = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 'held' end
local used = tonumber(redis.call('GET', KEYS[2]) or '0')
if used + tonumber(ARGV[2]) > tonumber(ARGV[4]) then return 'quota' end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. ARGV[3])
redis.call('INCRBY', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[5])
return 'added'
`
/** The same keys; ARGV: sha256, tenant. Answers {removed, holders left}. */
const REMOVE = `
local value = redis.call('HGET', KEYS[1], ARGV[1])
if not value then return {0, redis.call('SCARD', KEYS[3])} end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DECRBY', KEYS[2], tonumber(string.match(value, '^(%d+):')))
redis.call('SREM', KEYS[3], ARGV[2])
return {1, redis.call('SCARD', KEYS[3])}
`

/**
 * On Redis: `<prefix>:uploads:<tenant>` (hash sha256 → `bytes:createdAt`), `<prefix>:uploads-used:<tenant>` (its
 * bytes), `<prefix>:upload-holders:<sha256>` (the tenants holding it). Each change is one Lua script.
 */
export class RedisUploadIndex implements UploadIndex {
  private client?: Redis

  /** `connect` is called at the first use: a node that never sees an upload never opens a connection for them. */
  constructor(
    private readonly connect: () => Redis,
    private readonly prefix: string,
  ) {}

  private get redis(): Redis {
    this.client ??= this.connect()
    return this.client
  }

  private keys(tenant: string, sha256: string): [string, string, string] {
    return [`${this.prefix}:uploads:${tenant}`, `${this.prefix}:uploads-used:${tenant}`, `${this.prefix}:upload-holders:${sha256}`]
  }

  async find(tenant: string, sha256: string): Promise<IndexedUpload | undefined> {
    const value = await this.redis.hget(this.keys(tenant, sha256)[0], sha256)
    return value ? parse(sha256, value) : undefined
  }

  async list(tenant: string): Promise<IndexedUpload[]> {
    const all = await this.redis.hgetall(this.keys(tenant, '')[0])
    return Object.entries(all)
      .map(([sha256, value]) => parse(sha256, value))
      .sort((a, b) => a.createdAt - b.createdAt || a.sha256.localeCompare(b.sha256))
  }

  async used(tenant: string): Promise<number> {
    return Number((await this.redis.get(this.keys(tenant, '')[1])) ?? 0)
  }

  async add(tenant: string, upload: IndexedUpload, quotaBytes: number): Promise<AddOutcome> {
    const keys = this.keys(tenant, upload.sha256)
    return (await this.redis.eval(ADD, 3, ...keys, upload.sha256, upload.bytes, upload.createdAt, quotaBytes, tenant)) as AddOutcome
  }

  async heldByAnyone(sha256: string): Promise<boolean> {
    return (await this.redis.scard(this.keys('', sha256)[2])) > 0
  }

  async remove(tenant: string, sha256: string): Promise<{ removed: boolean; stillHeld: boolean }> {
    const [removed, left] = (await this.redis.eval(REMOVE, 3, ...this.keys(tenant, sha256), sha256, tenant)) as [number, number]
    return { removed: removed === 1, stillHeld: left > 0 }
  }

  async close(): Promise<void> {
    const client = this.client
    this.client = undefined
    await client?.quit().catch(() => client.disconnect())
  }
}

function parse(sha256: string, value: string): IndexedUpload {
  const [bytes, createdAt] = value.split(':')
  return { sha256, bytes: Number(bytes), createdAt: Number(createdAt) }
}
