import fs from 'node:fs'
import path from 'node:path'

/**
 * The few calls the embedded stores use, in better-sqlite3's API, which libsql (the driver here) shares. libsql ships
 * its SQLite build per platform inside npm packages (@libsql/linux-x64-gnu, …), so installing execgate needs no
 * compiler and no download outside the registry; better-sqlite3 compiles from source wherever its prebuilt binary
 * cannot be fetched from GitHub. Declaring the calls keeps the surface small and lets a caller pass either driver.
 */
export interface Statement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint }
  /**
   * For reads: libsql (0.5.29) resets a statement after `get` succeeds, not before it runs, so a write whose `get`
   * threw (`INSERT … RETURNING`) would run its next `get` with the old parameters.
   */
  get(...params: unknown[]): unknown
  all(...params: unknown[]): unknown[]
}

export interface Transaction<A extends unknown[], R> {
  (...args: A): R
  /** BEGIN IMMEDIATE: takes the write lock first, so two processes appending never deadlock upgrading a read. */
  immediate(...args: A): R
}

export interface Database {
  prepare(sql: string): Statement
  exec(sql: string): void
  pragma(sql: string, options?: { simple: boolean }): unknown
  transaction<A extends unknown[], R>(fn: (...args: A) => R): Transaction<A, R>
  close(): void
}

/** A libsql (or better-sqlite3) constructor. */
export type SqliteDriver = new (file: string) => Database

/**
 * Opens an embedded store's SQLite file the way every store does (tasks, plans and the ledger share these settings):
 * its folder created, WAL so readers run beside the writer, `synchronous = NORMAL` (every committed transaction
 * survives a process crash, kill -9; at most the last ones are lost on a power loss), and a 5 s wait for the write
 * lock another process (the CLI, a second worker) may hold for a moment. Then `schema` is applied.
 *
 * `join`: use the connection this process already has open on the file (another store's, same driver), if any, rather
 * than a second one. Two connections on one file each throw their whole page cache away whenever the other commits,
 * and read back every page they touch next: the plans' store, beside the tasks' in `tasks.sqlite`, re-read ~40 pages a
 * 3-step plan that way (strace). Every store call runs to its end synchronously, so stores sharing a connection never
 * interleave inside a transaction. The connection closes when its last user does.
 */
export function openSqlite(
  file: string,
  schema: string,
  driver?: SqliteDriver,
  options: { pageSize?: number; join?: boolean } = {},
): Database {
  const key = file === ':memory:' ? undefined : path.resolve(file)
  if (key) fs.mkdirSync(path.dirname(key), { recursive: true })
  // Loaded here, not at import, so a process that never opens a store never loads the native module.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- synchronous on purpose: stores open in constructors
  const Driver = driver ?? (require('libsql') as SqliteDriver)
  const open = key ? openFiles(Driver) : undefined
  const shared = options.join && key ? open!.get(key) : undefined
  if (shared) {
    shared.db.exec(schema)
    shared.users++
    // Its own `close`, over the shared connection's every other call.
    const joined = Object.create(shared.db) as Database
    joined.close = releaser(shared, open!, key!)
    return joined
  }
  const db = withStatementGuards(new Driver(file))
  // Takes effect only for a file made now (before WAL and the schema write its first page); an existing file keeps its own.
  if (options.pageSize) db.pragma(`page_size = ${options.pageSize}`)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('busy_timeout = 5000')
  db.exec(schema)
  if (!key || open!.has(key)) return db
  // The first connection on the file is the one later joins share (a second opened without `join` stays its own).
  const entry: OpenFile = { db, users: 1, close: db.close.bind(db) }
  open!.set(key, entry)
  db.close = releaser(entry, open!, key)
  return db
}

interface OpenFile {
  db: Database
  users: number
  close: () => void
}

/** Connections `join` may share, by driver and file. */
const openByDriver = new WeakMap<SqliteDriver, Map<string, OpenFile>>()

function openFiles(driver: SqliteDriver): Map<string, OpenFile> {
  let open = openByDriver.get(driver)
  if (!open) openByDriver.set(driver, (open = new Map()))
  return open
}

/** One user's `close` of a shared connection: once, and the connection's own close with its last user's. */
function releaser(entry: OpenFile, open: Map<string, OpenFile>, key: string): () => void {
  let released = false
  return () => {
    if (released) return
    released = true
    if (--entry.users > 0) return
    if (open.get(key) === entry) open.delete(key)
    entry.close()
  }
}

/**
 * `db.transaction(fn).immediate` with BEGIN, COMMIT and ROLLBACK prepared once: libsql's own wrapper sends each
 * through `exec`, which parses and prepares it again every time, on a store's hot path (the task store's two
 * transactions a task). A failed COMMIT is rolled back like a throw of `fn`. IMMEDIATE: the write lock is taken
 * first (waiting `busy_timeout` for another process's), because `fn` reads, then writes what it read: begun deferred,
 * a commit by another process on the same file (a second worker, the CLI) between the read and the write failed the
 * transaction at once (SQLITE_BUSY_SNAPSHOT: no wait helps a read another commit made stale).
 */
export function preparedTransaction<A extends unknown[], R>(db: Database, fn: (...args: A) => R): (...args: A) => R {
  const begin = db.prepare('BEGIN IMMEDIATE')
  const commit = db.prepare('COMMIT')
  const rollback = db.prepare('ROLLBACK')
  return (...args: A): R => {
    begin.run()
    try {
      const result = fn(...args)
      commit.run()
      return result
    } catch (error) {
      try {
        rollback.run()
      } catch {
        // SQLite ended the transaction itself (some errors roll back on their own): nothing left to roll back.
      }
      throw error
    }
  }
}

/**
 * Every statement as the stores need it from libsql, wrapped once here: rows without the enumerable
 * `_metadata: { duration }` libsql's `Statement.get` adds (`all` does not; stores spread and serialise rows), and a
 * statement refused busy ended at once (endRefused).
 */
function withStatementGuards(db: Database): Database {
  const prepare = db.prepare.bind(db)
  db.prepare = (sql: string) => {
    const statement = prepare(sql)
    const get = statement.get.bind(statement)
    // Each call as libsql makes it, with a statement refused busy ended before the refusal reaches the store.
    const guarded =
      <R>(call: (...params: unknown[]) => R) =>
      (...params: unknown[]): R => {
        try {
          return call(...params)
        } catch (error) {
          endRefused(db, sql, get, params, error)
          throw error
        }
      }
    const getRow = guarded(get)
    statement.run = guarded(statement.run.bind(statement))
    statement.all = guarded(statement.all.bind(statement))
    statement.get = (...params: unknown[]) => {
      const row = getRow(...params)
      if (row !== null && typeof row === 'object' && '_metadata' in row) delete (row as { _metadata?: unknown })._metadata
      return row
    }
    return statement
  }
  return db
}

/**
 * A statement SQLite refuses busy stays in progress (so that it can be stepped again), and libsql (0.5.29) resets a
 * statement only before it runs it, never after a failed step, and offers no reset: the refused statement then stays
 * in progress until the garbage collector finalizes it. Meanwhile the connection counts it as a writer, so its later
 * writes report success but are never committed (SQLite commits a write on its own only when no other write is in
 * progress), and the finalizer then rolls them all back: lost (tursodatabase/libsql-js#228, libsql-client-ts#352;
 * test/fabric/sqlite-busy.test.ts). Stepped again under `query_only`, a write is refused read-only where it stopped,
 * taking the lock, before it writes anything, and that refusal ends it; a read steps to its row and `get` resets it.
 * A COMMIT is left alone: in progress after busy is how SQLite asks for it to be retried, and stepped again it commits.
 */
function endRefused(db: Database, sql: string, get: (...params: unknown[]) => unknown, params: unknown[], error: unknown): void {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string' || !code.startsWith('SQLITE_BUSY') || /^\s*(COMMIT|END)\b/i.test(sql)) return
  db.pragma('query_only = 1')
  try {
    get(...params)
  } catch {
    // Refused read-only: what ends it.
  } finally {
    db.pragma('query_only = 0')
  }
}
