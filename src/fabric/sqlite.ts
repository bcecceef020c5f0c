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
 */
export function openSqlite(file: string, schema: string, driver?: SqliteDriver, options: { pageSize?: number } = {}): Database {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  // Loaded here, not at import, so a process that never opens a store never loads the native module.
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- synchronous on purpose: stores open in constructors
  const Driver = driver ?? (require('libsql') as SqliteDriver)
  const db = withPlainRows(new Driver(file))
  // Takes effect only for a file made now (before WAL and the schema write its first page); an existing file keeps its own.
  if (options.pageSize) db.pragma(`page_size = ${options.pageSize}`)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('busy_timeout = 5000')
  db.exec(schema)
  return db
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
 * libsql's `Statement.get` adds an enumerable `_metadata: { duration }` to the row it returns (`all` does not);
 * stores spread and serialise rows, so it is taken off here, once, for every statement.
 */
function withPlainRows(db: Database): Database {
  const prepare = db.prepare.bind(db)
  db.prepare = (sql: string) => {
    const statement = prepare(sql)
    const get = statement.get.bind(statement)
    statement.get = (...params: unknown[]) => {
      const row = get(...params)
      if (row !== null && typeof row === 'object' && '_metadata' in row) delete (row as { _metadata?: unknown })._metadata
      return row
    }
    return statement
  }
  return db
}
