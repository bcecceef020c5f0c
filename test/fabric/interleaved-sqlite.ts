import { openSqlite, type Database, type SqliteDriver } from '../../src/fabric/sqlite'

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the driver itself, as the stores load it
const Libsql = require('libsql') as SqliteDriver

/**
 * libsql as a store opens it, with another process's write run (once, when armed) right after the store's next run of
 * one read statement (`readSql`, exactly as the store prepares it): the moment between a read and the write that
 * depends on it. The other process is a second connection to the same file, which does not wait for the write lock
 * (a test thread cannot wait for itself): while the store holds that lock its write is refused (`refused`).
 */
export function interleavedSqlite(readSql: string): {
  driver: SqliteDriver
  /**
   * Opens a connection of the other process to the file, as a store opens one (so a write of it refused busy leaves it
   * committing its later ones: test/fabric/sqlite-busy.test.ts); closed by `close`.
   */
  other(file: string): Database
  /** Runs `write` right after the next read, keeping what it threw (a refusal) in `refused`. */
  arm(write: () => void): void
  /** Whether the armed write ran (the read happened). */
  readonly fired: boolean
  readonly refused: unknown
  close(): void
} {
  let armed: (() => void) | undefined
  let fired = false
  let refused: unknown
  const others: Database[] = []
  class Interleaved {
    constructor(file: string) {
      const db: Database = new Libsql(file)
      const prepare = db.prepare.bind(db)
      db.prepare = (sql: string) => {
        const statement = prepare(sql)
        if (sql !== readSql) return statement
        const get = statement.get.bind(statement)
        statement.get = (...params: unknown[]) => {
          const row = get(...params)
          const write = armed
          armed = undefined
          if (write) {
            fired = true
            try {
              write()
            } catch (error) {
              refused = error
            }
          }
          return row
        }
        return statement
      }
      return db
    }
  }
  return {
    driver: Interleaved as unknown as SqliteDriver,
    other(file) {
      const db = openSqlite(file, '', Libsql)
      db.pragma('busy_timeout = 0')
      others.push(db)
      return db
    },
    arm(write) {
      armed = write
    },
    get fired() {
      return fired
    },
    get refused() {
      return refused
    },
    close() {
      for (const db of others) db.close()
    },
  }
}
