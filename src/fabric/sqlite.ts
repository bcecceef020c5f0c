import fs from 'node:fs'
import path from 'node:path'

/** The few better-sqlite3 calls the embedded stores use (the package ships no types; declaring them keeps the surface small). */
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

/** A better-sqlite3 constructor. */
export type SqliteDriver = new (file: string) => Database

/**
 * Opens an embedded store's SQLite file the way every store does (tasks, plans and the ledger share these settings):
 * its folder created, WAL so readers run beside the writer, `synchronous = NORMAL` (every committed transaction
 * survives a process crash, kill -9; at most the last ones are lost on a power loss), and a 5 s wait for the write
 * lock another process (the CLI, a second worker) may hold for a moment. Then `schema` is applied.
 */
export function openSqlite(file: string, schema: string, driver?: SqliteDriver): Database {
  if (file !== ':memory:') fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true })
  // Loaded here, not at import, so a process that never opens a store never loads the native module.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Driver = driver ?? (require('better-sqlite3') as SqliteDriver)
  const db = new Driver(file)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma('busy_timeout = 5000')
  db.exec(schema)
  return db
}
