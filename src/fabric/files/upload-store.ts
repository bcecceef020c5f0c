import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform, type Readable } from 'node:stream'
import { ExecgateError } from '../../core/errors'
import { DirectoryBlobStore } from '../ledger/blob-store'
import { openSqlite, type Database } from '../sqlite'

/**
 * Files uploaded once and named by digest afterwards (`PUT /v1/files`, `execgate run --file`): bytes in a
 * content-addressed directory blob store (the ledger's kind and layout, `<root>/ab/<sha256>`), and which tenant holds
 * which digest in a SQLite index beside it. A tenant sees only digests it uploaded itself: naming another tenant's
 * digest answers exactly as a missing one does, so a digest proves nothing about what others hold.
 */

export interface UploadStoreOptions {
  /** Folder of the blobs (`<fabric.dataDir>/uploads` by default). */
  root: string
  /** Bytes of uploads one tenant may hold. */
  quotaBytesPerTenant: number
}

export interface UploadedFile {
  sha256: string
  bytes: number
  createdAt: string
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
const DIGEST = /^[0-9a-f]{64}$/

interface Row {
  sha256: string
  bytes: number
  created_at: number
}

export class UploadStore {
  private readonly blobs: DirectoryBlobStore
  private db?: Database

  constructor(private readonly options: UploadStoreOptions) {
    this.blobs = new DirectoryBlobStore(options.root)
  }

  /** Opened on first use: a process that never sees an upload never opens the index. */
  private index(): Database {
    this.db ??= openSqlite(path.join(this.options.root, 'uploads.sqlite'), SCHEMA)
    return this.db
  }

  /** Bytes of uploads the tenant holds. */
  used(tenant: string): number {
    const row = this.index().prepare('SELECT COALESCE(SUM(bytes), 0) AS used FROM uploads WHERE tenant = ?').get(tenant) as { used: number }
    return Number(row.used)
  }

  /** The tenant's upload with this digest; undefined for one it never uploaded (whoever else did). */
  find(tenant: string, sha256: string): UploadedFile | undefined {
    if (!DIGEST.test(sha256)) return undefined
    const row = this.index()
      .prepare('SELECT sha256, bytes, created_at FROM uploads WHERE tenant = ? AND sha256 = ?')
      .get(tenant, sha256) as Row | undefined
    return row && fs.existsSync(this.blobs.pathOf(sha256)) ? toFile(row) : undefined
  }

  /** Where the tenant's upload is on this host, for adapters that bind it in read-only. */
  locate(tenant: string, sha256: string): { hostPath: string; bytes: number } | undefined {
    const file = this.find(tenant, sha256)
    return file && { hostPath: this.blobs.pathOf(sha256), bytes: file.bytes }
  }

  list(tenant: string): UploadedFile[] {
    const rows = this.index()
      .prepare('SELECT sha256, bytes, created_at FROM uploads WHERE tenant = ? ORDER BY created_at, sha256')
      .all(tenant)
    return (rows as Row[]).map(toFile)
  }

  /**
   * Streams `source` into the store, hashing as it goes: never more than one chunk in memory. Past the tenant's quota
   * the stream is abandoned and nothing is kept; with `expectedSha256` bytes that hash otherwise are refused. The same
   * bytes uploaded again (by anyone) are one blob; the tenant's quota counts each digest once.
   */
  async put(
    tenant: string,
    source: Readable | AsyncIterable<Uint8Array>,
    expectedSha256?: string,
  ): Promise<UploadedFile & { reused: boolean }> {
    const used = this.used(tenant)
    const room = this.options.quotaBytesPerTenant - used
    const temporaryDirectory = path.join(this.options.root, 'incoming')
    await fs.promises.mkdir(temporaryDirectory, { recursive: true })
    const temporary = path.join(temporaryDirectory, `${process.pid}.${randomBytes(6).toString('hex')}`)
    const hash = createHash('sha256')
    let bytes = 0
    const quota = this.options.quotaBytesPerTenant
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        bytes += chunk.length
        if (bytes > room) {
          done(new ExecgateError('EXECGATE_FILE_QUOTA', { tenant, used, bytes: `at least ${bytes}`, quota }))
          return
        }
        hash.update(chunk)
        done(null, chunk)
      },
    })
    try {
      // 0644: the sandboxes' own uids read the file through a read-only bind; nothing can write it.
      await pipeline(source, counter, fs.createWriteStream(temporary, { mode: 0o644 }))
      const sha256 = hash.digest('hex')
      if (expectedSha256 !== undefined && expectedSha256 !== sha256)
        throw new ExecgateError('EXECGATE_FILE_DIGEST_MISMATCH', { actual: sha256, expected: expectedSha256 })
      const held = this.find(tenant, sha256)
      if (held) return { ...held, reused: true }
      const target = this.blobs.pathOf(sha256)
      await fs.promises.mkdir(path.dirname(target), { recursive: true, mode: 0o755 })
      // A rename: a reader never sees half a blob; the same bytes renamed twice are still the same blob.
      await fs.promises.rename(temporary, target)
      const createdAt = Date.now()
      this.index()
        .prepare('INSERT OR IGNORE INTO uploads (tenant, sha256, bytes, created_at) VALUES (?, ?, ?, ?)')
        .run(tenant, sha256, bytes, createdAt)
      return { sha256, bytes, createdAt: new Date(createdAt).toISOString(), reused: false }
    } finally {
      await fs.promises.rm(temporary, { force: true })
    }
  }

  /** Forgets the tenant's upload (its quota freed); the bytes go when no tenant holds the digest any more. */
  async delete(tenant: string, sha256: string): Promise<boolean> {
    if (!DIGEST.test(sha256)) return false
    const removed = this.index().prepare('DELETE FROM uploads WHERE tenant = ? AND sha256 = ?').run(tenant, sha256).changes > 0
    const stillHeld = this.index().prepare('SELECT 1 FROM uploads WHERE sha256 = ? LIMIT 1').get(sha256)
    if (removed && !stillHeld) await this.blobs.delete([sha256])
    return removed
  }

  close(): void {
    this.db?.close()
    this.db = undefined
  }
}

function toFile(row: Row): UploadedFile {
  return { sha256: row.sha256, bytes: Number(row.bytes), createdAt: new Date(Number(row.created_at)).toISOString() }
}
