import type { Database, Statement } from '../sqlite'
import { linksOf } from './entry-links'
import { RowInserter } from '../sqlite-row-inserter'
import { GENERATED_ROLES, type ArtifactLink, type LedgerEntry, type LinkRole } from './types'

/**
 * The SQLite store's link index (`ledger_links`): which of a tenant's records used or generated an artifact, keyed by
 * digest so lineage, access and retention find them without reading bodies.
 *
 * A row covers a **range** of the tenant's records, `seq` through `last_seq` (NULL: `seq` alone), that all name the
 * artifact the same way (same role, path, size, media type). Runs that repeat a code or a value (`1 + 1`, `2`) one
 * after the other extend their range instead of adding a row each: a trivial run's two link rows were ~6 µs of the
 * writer's ~34 µs a record (benchmarks.md). Rows written before ranges existed have no `last_seq` and read as ranges
 * of one, so a file from an older execgate opens and keeps working (the column is added on open).
 *
 * A range only grows from the record this store appended last for the tenant (`tails`): when the next record of the
 * tenant is the one after it and names the artifact the same way. Another process appending to the same file breaks
 * that sequence (its records take the seqs in between), and an UPDATE that finds its range changed (retention trimmed
 * it, here or in another process) writes a row of its own instead: a range never claims a record that does not name
 * the artifact.
 */

export const LINKS_SCHEMA = `
CREATE TABLE IF NOT EXISTS ledger_links (
  sha256 TEXT NOT NULL,
  tenant TEXT NOT NULL,
  direction TEXT NOT NULL,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL,
  path TEXT NOT NULL,
  size INTEGER NOT NULL,
  media_type TEXT NOT NULL,
  last_seq INTEGER,
  PRIMARY KEY (sha256, tenant, direction, seq, role, path)
) WITHOUT ROWID;
`

/** A record as the index takes it, inside its batch's transaction. */
export interface IndexedRecord {
  tenant: string
  seq: number
  entry: LedgerEntry
}

interface LinkRow {
  seq: number
  last_seq: number | null
  size: number
  media_type: string
}

/**
 * Where the ranges of a tenant's last appended record start: its link keys and their ranges' first seqs, side by
 * side (a record names a few artifacts: a list scanned is cheaper to make, a record at a time, than a Map).
 */
interface TenantTail {
  seq: number
  keys: string[]
  starts: number[]
}

const startOf = (tail: TenantTail | undefined, key: string): number | undefined => {
  if (!tail) return undefined
  const at = tail.keys.indexOf(key)
  return at < 0 ? undefined : tail.starts[at]
}

interface PendingRange {
  tenant: string
  key: string
  link: ArtifactLink
  start: number
  last: number
  /** Set when the range is already stored: its `last_seq` there, which this batch extends. */
  storedLast?: number
}

/** Tenants whose last record's links are remembered, at most (past it they are forgotten: new ranges start). */
const TAILS = 10_000
/** SQLite's default limit on bound parameters is far above this; chunks keep each IN list small. */
const IN_CHUNK = 500

export const linkDirection = (role: LinkRole): 'used' | 'generated' => (GENERATED_ROLES.includes(role) ? 'generated' : 'used')

/** Keys of links linksOf shares between records (a repeated code's, a value's): made once, the same string each time. */
const linkKeys = new WeakMap<ArtifactLink, string>()

function linkKey(link: ArtifactLink): string {
  let key = linkKeys.get(link)
  if (key === undefined) linkKeys.set(link, (key = `${link.sha256}\n${link.role}\n${link.path}\n${link.size}\n${link.mediaType}`))
  return key
}

/** Files written before ranges existed: their rows are ranges of one. */
function addLastSeq(db: Database): void {
  const has = () => (db.pragma('table_info(ledger_links)') as { name: string }[]).some((column) => column.name === 'last_seq')
  if (has()) return
  try {
    db.exec('ALTER TABLE ledger_links ADD COLUMN last_seq INTEGER')
  } catch (error) {
    // Another process opening the same file may have added it a moment before.
    if (!has()) throw error
  }
}

export class SqliteLinkIndex {
  private readonly insertRows: RowInserter
  private readonly statements: Record<'extend' | 'remove' | 'through', Statement>
  private readonly tails = new Map<string, TenantTail>()
  /** The tails of the transaction in progress: they become `tails` when it commits, and are dropped if it rolls back. */
  private readonly pendingTails = new Map<string, TenantTail>()

  constructor(private readonly db: Database) {
    addLastSeq(db)
    // Two ranges that start at the same record of the same link are one (retention re-inserting a trimmed range).
    this.insertRows = new RowInserter(
      db,
      'INSERT INTO ledger_links (tenant, seq, last_seq, sha256, direction, role, path, size, media_type) VALUES',
      9,
      `ON CONFLICT (sha256, tenant, direction, seq, role, path) DO UPDATE SET
        last_seq = MAX(COALESCE(ledger_links.last_seq, ledger_links.seq), COALESCE(excluded.last_seq, excluded.seq))`,
    )
    const where = 'sha256 = ? AND tenant = ? AND direction = ? AND seq = ? AND role = ? AND path = ?'
    this.statements = {
      extend: db.prepare(`UPDATE ledger_links SET last_seq = ? WHERE ${where} AND COALESCE(last_seq, seq) = ?`),
      remove: db.prepare(`DELETE FROM ledger_links WHERE ${where}`),
      through: db.prepare(
        'SELECT seq, last_seq, size, media_type FROM ledger_links ' +
          'WHERE sha256 = ? AND tenant = ? AND direction = ? AND seq <= ? AND role = ? AND path = ?',
      ),
    }
  }

  /** Indexes appended records (in seq order per tenant), inside their transaction; `commit` or `rollback` after it. */
  write(records: readonly IndexedRecord[]): void {
    // The batch's ranges by link key, each key's few (one per tenant and start) in a list: no id string made a link.
    const ranges = new Map<string, PendingRange[]>()
    const all: PendingRange[] = []
    for (const { tenant, seq, entry } of records) {
      const previous = this.pendingTails.get(tenant) ?? this.tails.get(tenant)
      const continued = previous?.seq === seq - 1 ? previous : undefined
      const tail: TenantTail = { seq, keys: [], starts: [] }
      for (const link of linksOf(entry)) {
        const key = linkKey(link)
        // The same link twice in one record is one row.
        if (tail.keys.includes(key)) continue
        const start = startOf(continued, key)
        const first = start ?? seq
        let same = ranges.get(key)
        const range = same?.find((candidate) => candidate.tenant === tenant && candidate.start === first)
        if (range) range.last = seq
        else {
          // Started by a record before this call: stored already, this call extends it.
          const made: PendingRange =
            start !== undefined
              ? { tenant, key, link, start, last: seq, storedLast: seq - 1 }
              : { tenant, key, link, start: seq, last: seq }
          if (!same) ranges.set(key, (same = []))
          same.push(made)
          all.push(made)
        }
        tail.keys.push(key)
        tail.starts.push(first)
      }
      this.pendingTails.set(tenant, tail)
    }
    const rows: unknown[] = []
    for (const range of all) {
      const { tenant, link } = range
      const direction = linkDirection(link.role)
      if (range.storedLast !== undefined) {
        const { extend } = this.statements
        const { changes } = extend.run(range.last, link.sha256, tenant, direction, range.start, link.role, link.path, range.storedLast)
        if (changes > 0) continue
        // The stored range changed meanwhile (retention trimmed it): this batch's part is a range of its own.
        const tail = this.pendingTails.get(tenant)
        const at = tail ? tail.keys.indexOf(range.key) : -1
        if (tail && at >= 0 && tail.starts[at] === range.start) tail.starts[at] = range.storedLast + 1
        range.start = range.storedLast + 1
      }
      const last = range.last > range.start ? range.last : null
      rows.push(tenant, range.start, last, link.sha256, direction, link.role, link.path, link.size, link.mediaType)
    }
    this.insertRows.insert(rows)
  }

  /** The transaction that `write` ran in committed. */
  commit(): void {
    if (this.tails.size + this.pendingTails.size > TAILS) this.tails.clear()
    for (const [tenant, tail] of this.pendingTails) this.tails.set(tenant, tail)
    this.pendingTails.clear()
  }

  /** The transaction that `write` ran in rolled back: its ranges were never stored. */
  rollback(): void {
    this.pendingTails.clear()
  }

  /** Seqs of the tenant's records that used (`used`) or generated (`generated`) any of these artifacts, in order. */
  linkedSeqs(tenant: string, sha256s: readonly string[], direction: 'used' | 'generated'): number[] {
    const seqs = new Set<number>()
    for (let at = 0; at < sha256s.length; at += IN_CHUNK) {
      const part = sha256s.slice(at, at + IN_CHUNK)
      // No DISTINCT: with it SQLite's planner once chose to walk every link of the tenant (126 ms among 100,000
      // records, against 0.1 ms by digest); the Set removes duplicates.
      const rows = this.db
        .prepare(
          `SELECT seq, last_seq FROM ledger_links WHERE sha256 IN (${part.map(() => '?').join(',')}) AND tenant = ? AND direction = ?`,
        )
        .all(...part, tenant, direction) as Pick<LinkRow, 'seq' | 'last_seq'>[]
      for (const row of rows) for (let seq = row.seq; seq <= (row.last_seq ?? row.seq); seq++) seqs.add(seq)
    }
    return [...seqs].sort((a, b) => a - b)
  }

  /**
   * Retention, inside its transaction: the tenant's records through `through` are removed, and `entries` are theirs.
   * Their links' rows go; a range that runs past `through` keeps its kept part. Answers the digests they named.
   */
  removeThrough(tenant: string, through: number, entries: readonly LedgerEntry[]): string[] {
    const links = new Map<string, ArtifactLink>()
    for (const entry of entries) for (const link of linksOf(entry)) links.set(`${link.sha256}\n${link.role}\n${link.path}`, link)
    for (const link of links.values()) {
      const direction = linkDirection(link.role)
      const rows = this.statements.through.all(link.sha256, tenant, direction, through, link.role, link.path) as LinkRow[]
      for (const row of rows) {
        this.statements.remove.run(link.sha256, tenant, direction, row.seq, link.role, link.path)
        const last = row.last_seq ?? row.seq
        if (last <= through) continue
        this.insertRows.insert([
          tenant,
          through + 1,
          last > through + 1 ? last : null,
          link.sha256,
          direction,
          link.role,
          link.path,
          row.size,
          row.media_type,
        ])
      }
    }
    // Ranges the tails name may have moved: the next appends start new ones.
    this.tails.clear()
    return [...new Set([...links.values()].map((link) => link.sha256))]
  }
}
