import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { SqliteLedgerStore, type RecordDraft, type RunRecord } from '../../../src/fabric/ledger'
import { chainRecord, GENESIS, verifyChain } from '../../../src/fabric/ledger/chain'
import { linksOf } from '../../../src/fabric/ledger/entry-links'
import { sha256 } from '../../../src/fabric/ledger/run-capture'
import { linkDirection } from '../../../src/fabric/ledger/sqlite-link-index'
import type { Database } from '../../../src/fabric/sqlite'

/**
 * The SQLite store's link rows as ranges (src/fabric/ledger/sqlite-link-index.ts): records that name an artifact the
 * same way one after another share a row, and every query answers exactly what one row per record answered: lineage's
 * seqs, access, retention's references, across batches, reopened stores, a second store on the same file (another
 * process), retention through the middle of a range (here and from the other store), and a file written before ranges.
 */

const CODE = 'print(1 + 1)'
const OUT = 'the same output'

function ref(refPath: string, content: string) {
  return { path: refPath, sha256: sha256(content), size: Buffer.byteLength(content), mediaType: 'text/plain' }
}

function draft(tenant: string, runId: string, code = CODE, outputs: string[] = [OUT]): RecordDraft {
  const entry: RunRecord = {
    kind: 'run',
    runId,
    traceId: runId,
    tenant,
    adapter: 'monty',
    execgateVersion: 'test',
    code: { ...ref('code', code), mediaType: 'text/x-python' },
    startedAt: new Date().toISOString(),
    endedAt: new Date().toISOString(),
    status: 'ok',
    wallMs: 1,
    inputs: [],
    outputs: outputs.map((content) => ref('out.txt', content)),
    stdout: { sha256: sha256(''), size: 0, stored: false },
    stderr: { sha256: sha256(''), size: 0, stored: false },
  }
  return { tenant, id: runId, recordedAt: Date.now(), entry }
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, index) => from + index)

let dataDir: string
let file: string
const stores: SqliteLedgerStore[] = []
let runs = 0

function open(): SqliteLedgerStore {
  const store = new SqliteLedgerStore({ file })
  stores.push(store)
  return store
}

/** A second connection to the file, as a person with sqlite3 (or another execgate) would have. */
function raw(): Database {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Driver = require('libsql') as new (file: string) => Database
  return new Driver(file)
}

function linkRows(content: string): number {
  const db = raw()
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM ledger_links WHERE sha256 = ?').get(sha256(content)) as { n: number }).n
  } finally {
    db.close()
  }
}

const runsOf = (tenant: string, count: number, code = CODE) => Array.from({ length: count }, () => draft(tenant, `r${++runs}`, code))

async function verify(store: SqliteLedgerStore, tenant: string) {
  return verifyChain({
    tenant,
    head: await store.head(tenant),
    checkpoint: await store.checkpoint(tenant),
    page: (after, limit) => store.page(tenant, after, limit),
  })
}

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-link-ranges-'))
  file = path.join(dataDir, 'ledger.sqlite')
})
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

test('runs that repeat a code and an output one after another share a row each, and lineage finds every run', async () => {
  const store = open()
  for (let batch = 0; batch < 3; batch++) await store.append(runsOf('a', 10))
  expect(await store.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual(range(1, 30))
  expect(await store.linkedSeqs('a', [sha256(OUT)], 'generated')).toEqual(range(1, 30))
  expect(linkRows(CODE)).toBe(1)
  expect(linkRows(OUT)).toBe(1)

  // Another code breaks the range; the same code after it starts a new one.
  await store.append([draft('a', 'other', 'print(2)'), ...runsOf('a', 2)])
  expect(await store.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual([...range(1, 30), 32, 33])
  expect(await store.linkedSeqs('a', [sha256('print(2)')], 'used')).toEqual([31])
  expect(linkRows(CODE)).toBe(2)

  // Tenants interleaved in one batch: each tenant's seqs are its own, and so are its ranges.
  await store.append([draft('a', 'a1'), draft('b', 'b1'), draft('a', 'a2'), draft('b', 'b2')])
  expect(await store.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual([...range(1, 30), ...range(32, 35)])
  expect(await store.linkedSeqs('b', [sha256(CODE)], 'used')).toEqual([1, 2])
  expect(await store.linkedSeqs('b', [sha256(CODE)], 'generated')).toEqual([])
  expect(await store.artifact('b', sha256(OUT))).toEqual({ ...ref('out.txt', OUT), role: 'output' })
  expect(await store.artifact('c', sha256(OUT))).toBeUndefined()
  expect(linkRows(CODE)).toBe(3)
  expect(await verify(store, 'a')).toMatchObject({ ok: true, records: 35 })
})

test('a batch with an id already stored is appended a record at a time, ranges included', async () => {
  const store = open()
  await store.append([draft('a', 'first')])
  const stored = await store.append([draft('a', 'first'), draft('a', 'second'), draft('a', 'third')])
  expect(stored.map((record) => record.seq)).toEqual([1, 2, 3])
  expect(await store.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual([1, 2, 3])
  expect(linkRows(CODE)).toBe(1)
})

test('a reopened store and a second store on the same file never claim records they did not write', async () => {
  const first = open()
  await first.append(runsOf('a', 5))
  const second = open()
  await second.append(runsOf('a', 2)) // 6–7: the second store knows nothing of 5, a row of its own
  await first.append(runsOf('a', 1)) // 8: the first store's last record was 5, not 7
  await second.append(runsOf('a', 1, 'print(3)')) // 9
  await first.append(runsOf('a', 1)) // 10
  expect(await first.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual([...range(1, 8), 10])
  expect(await second.linkedSeqs('a', [sha256('print(3)')], 'used')).toEqual([9])
  expect(await second.linkedSeqs('a', [sha256(OUT)], 'generated')).toEqual(range(1, 10))

  await first.close()
  stores.splice(stores.indexOf(first), 1)
  const reopened = open()
  await reopened.append(runsOf('a', 2)) // 11–12
  expect(await reopened.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual([...range(1, 8), ...range(10, 12)])
  expect(await verify(reopened, 'a')).toMatchObject({ ok: true, records: 12 })
})

test('retention through the middle of a range keeps the rest of it, here and from another store', async () => {
  const store = open()
  await store.append(runsOf('a', 12))
  await store.append(runsOf('a', 8))
  expect(new Set(await store.removeThrough('a', 7))).toEqual(new Set([sha256(CODE), sha256(OUT)]))
  expect(await store.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual(range(8, 20))
  expect(await store.referenced(sha256(CODE))).toBe(true)
  expect(await store.tenantBytes('a')).toBe(Buffer.byteLength(CODE) + Buffer.byteLength(OUT))
  await store.append(runsOf('a', 3))
  expect(await store.linkedSeqs('a', [sha256(OUT)], 'generated')).toEqual(range(8, 23))

  // Another process trims the range the first store is extending (21–23): the first store's next runs get a row of
  // their own, and the run after them extends that one.
  const other = open()
  await other.removeThrough('a', 22)
  await store.append(runsOf('a', 2))
  await store.append(runsOf('a', 1))
  expect(await store.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual(range(23, 26))
  expect(linkRows(CODE)).toBe(2)
  expect(await verify(store, 'a')).toMatchObject({ ok: true, records: 4, checkpoint: { seq: 22 } })

  await store.removeThrough('a', 26)
  expect(await store.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual([])
  expect(await store.referenced(sha256(CODE))).toBe(false)
  expect(await store.artifact('a', sha256(OUT))).toBeUndefined()
  expect(await store.tenantBytes('a')).toBe(0)
  expect(linkRows(CODE) + linkRows(OUT)).toBe(0)
})

test('a file written before ranges opens, keeps its rows, and takes new records after them', async () => {
  // The schema and rows as execgate wrote them before ranges: one link row per record, no last_seq column.
  const db = raw()
  db.exec(`
    CREATE TABLE ledger_records (tenant TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, recorded_at INTEGER NOT NULL,
      hash TEXT NOT NULL, body TEXT NOT NULL);
    CREATE UNIQUE INDEX ledger_records_seq ON ledger_records (tenant, seq);
    CREATE UNIQUE INDEX ledger_records_id ON ledger_records (tenant, id);
    CREATE TABLE ledger_links (sha256 TEXT NOT NULL, tenant TEXT NOT NULL, direction TEXT NOT NULL, seq INTEGER NOT NULL,
      role TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, media_type TEXT NOT NULL,
      PRIMARY KEY (sha256, tenant, direction, seq, role, path)) WITHOUT ROWID;
    CREATE TABLE ledger_chains (tenant TEXT PRIMARY KEY, head_seq INTEGER, head_hash TEXT, checkpoint_seq INTEGER, checkpoint_hash TEXT);
  `)
  let previous = GENESIS
  for (const old of runsOf('a', 3)) {
    const record = chainRecord(old, previous)
    const values = ['a', record.seq, record.id, old.recordedAt, record.hash, record.body]
    db.prepare('INSERT INTO ledger_records VALUES (?, ?, ?, ?, ?, ?)').run(...values)
    for (const link of linksOf(old.entry)) {
      db.prepare('INSERT INTO ledger_links VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
        link.sha256,
        'a',
        linkDirection(link.role),
        record.seq,
        link.role,
        link.path,
        link.size,
        link.mediaType,
      )
    }
    previous = { seq: record.seq, hash: record.hash }
  }
  db.prepare('INSERT INTO ledger_chains (tenant, head_seq, head_hash) VALUES (?, ?, ?)').run('a', previous.seq, previous.hash)
  db.close()

  const store = open()
  expect(await store.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual([1, 2, 3])
  await store.append(runsOf('a', 3))
  await store.append(runsOf('a', 2))
  expect(await store.linkedSeqs('a', [sha256(CODE)], 'used')).toEqual(range(1, 8))
  expect(linkRows(CODE)).toBe(4)
  expect(await verify(store, 'a')).toMatchObject({ ok: true, records: 8 })
  await store.removeThrough('a', 5)
  expect(await store.linkedSeqs('a', [sha256(OUT)], 'generated')).toEqual(range(6, 8))
  expect(await store.referenced(sha256(OUT))).toBe(true)
  // A second store opening the migrated file finds the column there already.
  expect(await open().linkedSeqs('a', [sha256(CODE)], 'used')).toEqual(range(6, 8))
})
