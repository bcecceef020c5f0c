import { openSqlite, type Database, type SqliteDriver, type Statement, type Transaction } from '../sqlite'
import { chainRecord, GENESIS, parseBody } from './chain'
import type { AppendOptions, LedgerRecordStore } from './record-store'
import { LINKS_SCHEMA, SqliteLinkIndex, type IndexedRecord } from './sqlite-link-index'
import { RowInserter } from '../sqlite-row-inserter'
import type { ArtifactLink, ChainPoint, LinkRole, PolicyText, RecordDraft, StoredRecord } from './types'

/**
 * The embedded record store: `ledger.sqlite` beside the task store's `tasks.sqlite` in `fabric.dataDir` (a sibling
 * file, not tables in the same file: every run appends here, and a file of its own means a run's record never waits
 * for a task transition's write lock, nor they for it; each can be copied, verified or removed alone). WAL and
 * `synchronous = NORMAL` like the task store: committed records survive a process crash.
 */

export const LEDGER_SQLITE_FILE_NAME = 'ledger.sqlite'

const SCHEMA = `
CREATE TABLE IF NOT EXISTS ledger_records (
  tenant TEXT NOT NULL,
  seq INTEGER NOT NULL,
  id TEXT NOT NULL,
  recorded_at INTEGER NOT NULL,
  hash TEXT NOT NULL,
  body TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS ledger_records_seq ON ledger_records (tenant, seq);
CREATE UNIQUE INDEX IF NOT EXISTS ledger_records_id ON ledger_records (tenant, id);
CREATE TABLE IF NOT EXISTS ledger_chains (
  tenant TEXT PRIMARY KEY,
  head_seq INTEGER,
  head_hash TEXT,
  checkpoint_seq INTEGER,
  checkpoint_hash TEXT
);
CREATE TABLE IF NOT EXISTS ledger_policies (
  sha256 TEXT PRIMARY KEY,
  body TEXT NOT NULL
) WITHOUT ROWID;
${LINKS_SCHEMA}`

interface RecordRow {
  tenant: string
  seq: number
  id: string
  hash: string
  body: string
}
interface ChainRow {
  head_seq: number | null
  head_hash: string | null
  checkpoint_seq: number | null
  checkpoint_hash: string | null
}
interface LinkRow {
  sha256: string
  role: LinkRole
  path: string
  size: number
  media_type: string
}

const toRecord = (row: RecordRow): StoredRecord => ({ tenant: row.tenant, seq: row.seq, id: row.id, hash: row.hash, body: row.body })
const REMOVE_CHUNK = 1000
/** SQLite's default limit on bound parameters is far above this; chunks keep each IN list small. */
const IN_CHUNK = 500

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = []
  for (let start = 0; start < items.length; start += IN_CHUNK) out.push(items.slice(start, start + IN_CHUNK))
  return out
}

/** Values a record row binds: tenant, seq, id, recorded_at, hash, body. */
const RECORD_WIDTH = 6
/** Appends between two checkpoints at most, when the writer is never idle. */
const CHECKPOINT_RECORDS = 8_000

/** Thrown inside a batch's transaction (rolling it back) when one of its ids is already stored. */
class AlreadyStored extends Error {}

export interface SqliteLedgerStoreOptions {
  /** The database file (its folder is created); `:memory:` for one that dies with the process. */
  file: string
  /** A libsql (better-sqlite3 API) constructor to use instead of loading the package. */
  driver?: SqliteDriver
}

export class SqliteLedgerStore implements LedgerRecordStore {
  private readonly db: Database
  private readonly statements: Record<
    'byId' | 'page' | 'chain' | 'setHead' | 'artifact' | 'referenced' | 'tenantBytes' | 'tenants' | 'putPolicy' | 'policy',
    Statement
  >
  private readonly appendAll: Transaction<[readonly RecordDraft[], boolean, readonly PolicyText[]], StoredRecord[]>
  private readonly insertRecords: RowInserter
  private readonly links: SqliteLinkIndex
  private readonly appendEach: Transaction<[readonly RecordDraft[], readonly PolicyText[]], StoredRecord[]>
  /** Records appended since the last checkpoint (the WAL's growth, in records). */
  private sinceCheckpoint = 0
  private readonly removeAll: Transaction<[string, number, number], string[]>

  constructor(options: SqliteLedgerStoreOptions) {
    // 16 KiB pages for a new file: a record's body is ~1.5 KB, and with 4 KiB pages every append touched more pages
    // and B-tree levels (measured: ~13 % less CPU per appended record, libsql, batches of 500).
    this.db = openSqlite(options.file, SCHEMA, options.driver, { pageSize: 16384 })
    // Links are keyed by digest, so appends touch pages all over that index: a larger cache keeps them in memory.
    this.db.pragma('cache_size = -16000')
    // Checkpoints are this store's to schedule (`idle`, and every CHECKPOINT_RECORDS appends), not SQLite's every
    // 1000 pages: an automatic one ran inside a batch's COMMIT, copying and syncing pages a later batch changed again
    // (measured: two thirds of a commit's cost). Durability is the WAL's either way: a committed batch survives a crash.
    this.db.pragma('wal_autocheckpoint = 0')
    this.insertRecords = new RowInserter(
      this.db,
      'INSERT INTO ledger_records (tenant, seq, id, recorded_at, hash, body) VALUES',
      RECORD_WIDTH,
      'ON CONFLICT (tenant, id) DO NOTHING',
    )
    this.links = new SqliteLinkIndex(this.db)
    const prepare = (sql: string) => this.db.prepare(sql)
    this.statements = {
      byId: prepare('SELECT tenant, seq, id, hash, body FROM ledger_records WHERE tenant = ? AND id = ?'),
      page: prepare('SELECT tenant, seq, id, hash, body FROM ledger_records WHERE tenant = ? AND seq > ? ORDER BY seq LIMIT ?'),
      chain: prepare('SELECT head_seq, head_hash, checkpoint_seq, checkpoint_hash FROM ledger_chains WHERE tenant = ?'),
      setHead: prepare(`INSERT INTO ledger_chains (tenant, head_seq, head_hash) VALUES (?, ?, ?)
        ON CONFLICT (tenant) DO UPDATE SET head_seq = excluded.head_seq, head_hash = excluded.head_hash`),
      artifact: prepare('SELECT sha256, role, path, size, media_type FROM ledger_links WHERE sha256 = ? AND tenant = ? LIMIT 1'),
      referenced: prepare('SELECT 1 FROM ledger_links WHERE sha256 = ? LIMIT 1'),
      tenantBytes: prepare(
        'SELECT COALESCE(SUM(size), 0) AS bytes FROM (SELECT MAX(size) AS size FROM ledger_links WHERE tenant = ? GROUP BY sha256)',
      ),
      tenants: prepare('SELECT tenant FROM ledger_chains ORDER BY tenant'),
      putPolicy: prepare('INSERT INTO ledger_policies (sha256, body) VALUES (?, ?) ON CONFLICT (sha256) DO NOTHING'),
      policy: prepare('SELECT body FROM ledger_policies WHERE sha256 = ?'),
    }
    // A batch's new policies go in its transaction: a record is never committed without the policy it names.
    this.appendAll = this.db.transaction((drafts: readonly RecordDraft[], answer: boolean, policies: readonly PolicyText[]) => {
      this.putPolicies(policies)
      return this.appendInTransaction(drafts, answer)
    })
    this.appendEach = this.db.transaction((drafts: readonly RecordDraft[], policies: readonly PolicyText[]) => {
      this.putPolicies(policies)
      return this.appendOneByOne(drafts)
    })
    this.removeAll = this.db.transaction((tenant: string, from: number, through: number) => {
      const rows = this.db
        .prepare('SELECT seq, hash, body FROM ledger_records WHERE tenant = ? AND seq >= ? AND seq <= ? ORDER BY seq')
        .all(tenant, from, through) as { seq: number; hash: string; body: string }[]
      const last = rows[rows.length - 1]
      if (!last) return []
      const shas = this.links.removeThrough(
        tenant,
        through,
        rows.map((row) => parseBody(row).entry),
      )
      this.db.prepare('DELETE FROM ledger_records WHERE tenant = ? AND seq >= ? AND seq <= ?').run(tenant, from, through)
      this.db.prepare('UPDATE ledger_chains SET checkpoint_seq = ?, checkpoint_hash = ? WHERE tenant = ?').run(last.seq, last.hash, tenant)
      return shas
    })
  }

  /**
   * One batch, inside its transaction, as multi-row INSERTs: libsql costs ~1.5 µs a statement call and ~0.2 µs a
   * bound value, and a trivial run's record was three calls. The rows go in RowInserter.ROWS at a time, as they are
   * chained: a record's body (and the entry JSON the writer's draft makes for it) is then garbage a few rows later,
   * not kept with every other body of the batch until its end (`answer: false` keeps none). An id the tenant already
   * has (a plan version or a sandbox file recorded again; run ids are UUIDs) makes an INSERT change fewer rows than it
   * was given: then the batch is rolled back and appended one record at a time, where the stored record stands
   * (appendOneByOne).
   */
  private appendInTransaction(drafts: readonly RecordDraft[], answer: boolean): StoredRecord[] {
    const heads = new Map<string, ChainPoint>()
    // The batch's records by tenant and id (a repeat within the batch is answered with the first): kept only when answered.
    const fresh = new Map<string, StoredRecord | undefined>()
    const records: StoredRecord[] = []
    const indexed: IndexedRecord[] = []
    let values: unknown[] = []
    let unwritten = 0
    const write = () => {
      if (unwritten === 0) return
      if (this.insertRecords.insert(values) < unwritten) throw new AlreadyStored()
      values = []
      unwritten = 0
    }
    for (const draft of drafts) {
      const key = `${draft.tenant}\n${draft.id}`
      if (fresh.has(key)) {
        if (answer) records.push(fresh.get(key)!)
        continue
      }
      const record = chainRecord(draft, heads.get(draft.tenant) ?? this.tip(draft.tenant))
      values.push(record.tenant, record.seq, record.id, draft.recordedAt, record.hash, record.body)
      indexed.push({ tenant: record.tenant, seq: record.seq, entry: draft.entry })
      heads.set(draft.tenant, { seq: record.seq, hash: record.hash })
      fresh.set(key, answer ? record : undefined)
      if (answer) records.push(record)
      if (++unwritten === RowInserter.ROWS) write()
    }
    write()
    this.links.write(indexed)
    // Each tenant's head once per batch, inside the same transaction: one statement per tenant, not per record.
    for (const [tenant, head] of heads) this.statements.setHead.run(tenant, head.seq, head.hash)
    this.sinceCheckpoint += indexed.length
    return records
  }

  private putPolicies(policies: readonly PolicyText[]): void {
    for (const policy of policies) this.statements.putPolicy.run(policy.sha256, policy.text)
  }

  /** The batch a record at a time: a draft whose id the tenant already has is not appended, the stored one stands. */
  private appendOneByOne(drafts: readonly RecordDraft[]): StoredRecord[] {
    const heads = new Map<string, ChainPoint>()
    let appended = 0
    const records = drafts.map((draft) => {
      const record = chainRecord(draft, heads.get(draft.tenant) ?? this.tip(draft.tenant))
      if (this.insertRecords.insert([record.tenant, record.seq, record.id, draft.recordedAt, record.hash, record.body]) === 0) {
        return toRecord(this.statements.byId.get(draft.tenant, draft.id) as RecordRow)
      }
      this.links.write([{ tenant: record.tenant, seq: record.seq, entry: draft.entry }])
      heads.set(draft.tenant, { seq: record.seq, hash: record.hash })
      appended++
      return record
    })
    for (const [tenant, head] of heads) this.statements.setHead.run(tenant, head.seq, head.hash)
    this.sinceCheckpoint += appended
    return records
  }

  /**
   * Folds the WAL back into the database file (PASSIVE: never waits for a reader). The ledger's writer calls it when
   * its queue is empty; an append calls it past CHECKPOINT_RECORDS, so a writer that is never idle still bounds the
   * WAL (~20 MB at 2.4 KB a trivial run's record with its indexes).
   */
  idle(): Promise<void> {
    if (this.sinceCheckpoint > 0) {
      this.sinceCheckpoint = 0
      this.db.pragma('wal_checkpoint(PASSIVE)')
    }
    return Promise.resolve()
  }

  /** Where the tenant's next record attaches: its head, else its checkpoint, else the start. */
  private tip(tenant: string): ChainPoint {
    const row = this.statements.chain.get(tenant) as ChainRow | undefined
    if (row?.head_seq != null && row.head_hash != null && row.head_seq > (row.checkpoint_seq ?? 0))
      return { seq: row.head_seq, hash: row.head_hash }
    if (row?.checkpoint_seq != null && row.checkpoint_hash != null) return { seq: row.checkpoint_seq, hash: row.checkpoint_hash }
    return GENESIS
  }

  async append(drafts: readonly RecordDraft[], options: AppendOptions = {}): Promise<StoredRecord[]> {
    if (!drafts.length) return []
    let records: StoredRecord[]
    const policies = options.policies ?? []
    try {
      records = this.appendAll.immediate(drafts, options.answer !== false, policies)
    } catch (error) {
      this.links.rollback()
      if (!(error instanceof AlreadyStored)) throw error
      try {
        records = this.appendEach.immediate(drafts, policies)
      } catch (again) {
        this.links.rollback()
        throw again
      }
    }
    this.links.commit()
    if (this.sinceCheckpoint >= CHECKPOINT_RECORDS) await this.idle()
    return records
  }

  async byId(tenant: string, id: string): Promise<StoredRecord | undefined> {
    const row = this.statements.byId.get(tenant, id) as RecordRow | undefined
    return row && toRecord(row)
  }

  async bySeq(tenant: string, seqs: readonly number[]): Promise<StoredRecord[]> {
    return chunks(seqs).flatMap((part) =>
      (
        this.db
          .prepare(
            `SELECT tenant, seq, id, hash, body FROM ledger_records WHERE tenant = ? AND seq IN ` +
              `(${part.map(() => '?').join(',')}) ORDER BY seq`,
          )
          .all(tenant, ...part) as RecordRow[]
      ).map(toRecord),
    )
  }

  async page(tenant: string, afterSeq: number, limit: number): Promise<StoredRecord[]> {
    return (this.statements.page.all(tenant, afterSeq, limit) as RecordRow[]).map(toRecord)
  }

  async linkedSeqs(tenant: string, sha256s: readonly string[], linkDirection: 'used' | 'generated'): Promise<number[]> {
    return this.links.linkedSeqs(tenant, sha256s, linkDirection)
  }

  async artifact(tenant: string, sha256: string): Promise<ArtifactLink | undefined> {
    const row = this.statements.artifact.get(sha256, tenant) as LinkRow | undefined
    return row && { sha256: row.sha256, role: row.role, path: row.path, size: row.size, mediaType: row.media_type }
  }

  async head(tenant: string): Promise<ChainPoint | undefined> {
    const row = this.statements.chain.get(tenant) as ChainRow | undefined
    return row?.head_seq != null && row.head_hash != null ? { seq: row.head_seq, hash: row.head_hash } : undefined
  }

  async checkpoint(tenant: string): Promise<ChainPoint | undefined> {
    const row = this.statements.chain.get(tenant) as ChainRow | undefined
    return row?.checkpoint_seq != null && row.checkpoint_hash != null ? { seq: row.checkpoint_seq, hash: row.checkpoint_hash } : undefined
  }

  async tenants(): Promise<string[]> {
    return (this.statements.tenants.all() as { tenant: string }[]).map((row) => row.tenant)
  }

  async removeThrough(tenant: string, seq: number): Promise<string[]> {
    const shas = new Set<string>()
    // A thousand records per transaction: the checkpoint moves with each, so the chain verifies between them too.
    for (let from = ((await this.checkpoint(tenant))?.seq ?? 0) + 1; from <= seq; from += REMOVE_CHUNK) {
      for (const sha of this.removeAll.immediate(tenant, from, Math.min(seq, from + REMOVE_CHUNK - 1))) shas.add(sha)
    }
    return [...shas]
  }

  async policy(sha256: string): Promise<string | undefined> {
    return (this.statements.policy.get(sha256) as { body: string } | undefined)?.body
  }

  async referenced(sha256: string): Promise<boolean> {
    return this.statements.referenced.get(sha256) !== undefined
  }

  async tenantBytes(tenant: string): Promise<number> {
    return (this.statements.tenantBytes.get(tenant) as { bytes: number }).bytes
  }

  async close(): Promise<void> {
    this.db.close()
  }
}
