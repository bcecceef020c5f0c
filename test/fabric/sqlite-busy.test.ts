import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { openSqlite, preparedTransaction, type Database } from '../../src/fabric/sqlite'

/**
 * A store's connection refused busy (another process held the write lock past its busy wait) must commit its later
 * writes. libsql left the refused statement in progress, so the connection's later writes reported success, were never
 * committed, and were rolled back when the garbage collector finalized the refused statement (src/fabric/sqlite.ts,
 * endRefused). Real libsql on a real file; the lock is held by another process, read back through a third connection.
 */

const SCHEMA = 'CREATE TABLE IF NOT EXISTS t (x INTEGER NOT NULL)'
const ROOT = path.resolve(__dirname, '../..')
let dir: string
let file: string
let store: Database
let reader: Database

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-sqlite-busy-'))
  file = path.join(dir, 'store.sqlite')
  store = openSqlite(file, SCHEMA)
  // The stores wait 5 s for the lock; 50 ms is the same refusal, sooner.
  store.pragma('busy_timeout = 50')
  reader = openSqlite(file, SCHEMA)
})
afterEach(() => {
  store.close()
  reader.close()
  fs.rmSync(dir, { recursive: true, force: true })
})

/** Another process that takes the file's write lock (BEGIN IMMEDIATE) and holds it until `release`. */
async function holdWriteLock(): Promise<{ release(): Promise<void> }> {
  const script = `
    const db = new (require('libsql'))(process.argv[1])
    db.exec('BEGIN IMMEDIATE')
    process.stdout.write('held\\n')
    process.stdin.once('data', () => { db.exec('ROLLBACK'); db.close(); process.exit(0) })`
  const child: ChildProcess = spawn(process.execPath, ['-e', script, file], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] })
  await new Promise<void>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before holding the lock`)))
    child.stdout!.once('data', () => resolve())
  })
  return {
    release: () =>
      new Promise<void>((resolve) => {
        child.removeAllListeners('exit')
        child.once('exit', () => resolve())
        child.stdin!.write('go\n')
      }),
  }
}

const committed = () => (reader.prepare('SELECT x FROM t ORDER BY x').all() as { x: number }[]).map((row) => row.x)

test('a write refused busy leaves the same connection committing its later writes', async () => {
  const insert = store.prepare('INSERT INTO t (x) VALUES (?)')
  const lock = await holdWriteLock()
  expect(() => insert.run(1)).toThrow(/busy|locked/i)
  await lock.release()
  // Another statement of the connection, then the refused statement itself run again.
  store.prepare('INSERT INTO t (x) VALUES (?)').run(2)
  insert.run(3)
  expect(committed()).toEqual([2, 3])
})

test('a transaction whose BEGIN IMMEDIATE was refused busy leaves the connection committing', async () => {
  const insert = store.prepare('INSERT INTO t (x) VALUES (?)')
  const first = preparedTransaction(store, (x: number) => insert.run(x))
  const second = preparedTransaction(store, (x: number) => insert.run(x))
  const lock = await holdWriteLock()
  expect(() => first(1)).toThrow(/busy|locked/i)
  await lock.release()
  // A write outside a transaction, then another transaction (its own BEGIN and COMMIT statements).
  insert.run(2)
  second(3)
  expect(committed()).toEqual([2, 3])
})
