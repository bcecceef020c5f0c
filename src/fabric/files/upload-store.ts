import { createHash, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import { Transform, type Readable } from 'node:stream'
import { ExecgateError } from '../../core/errors'
import { DirectoryBlobStore } from '../ledger/blob-store'
import type { S3Objects } from '../../workspace/s3-objects'
import { LocalCopies } from './local-copies'
import { SqliteUploadIndex, type IndexedUpload, type UploadIndex } from './upload-index'

/**
 * Files uploaded once and named by digest afterwards (`PUT /v1/files`, `execgate run --file`): bytes in a
 * content-addressed directory (the ledger's kind and layout, `<root>/ab/<sha256>`), which tenant holds which digest in
 * an index (SQLite beside them, or Redis for every node, src/fabric/files/upload-index.ts). Where the ledger's blobs
 * are in a bucket, uploads go there too (`<prefix>uploads/<sha256>`), and the folder is this node's copy of them: a
 * node that did not receive an upload fetches it (checked against its digest) the first time a run names it, since
 * the process and docker tiers bind a file of this host. A tenant sees only digests it uploaded itself: naming
 * another tenant's digest answers exactly as a missing one does, so a digest proves nothing about what others hold.
 */

export interface UploadStoreOptions {
  /** Folder of the blobs (`<fabric.dataDir>/uploads` by default): this node's copies. */
  root: string
  /** Bytes of uploads one tenant may hold. */
  quotaBytesPerTenant: number
  /** Which tenant holds which digest. @default SQLite in `root` */
  index?: UploadIndex
  /** The bucket the blobs are shared through (the ledger's, under `uploads/`), when nodes share one. */
  shared?: S3Objects
  /**
   * With `shared`: bytes of copies this node keeps (`fabric.files.localCopyBytes`), least recently used removed
   * first; 0 keeps all. Copies of uploads no tenant holds any more are removed too (local-copies.ts).
   */
  localCopyBytes?: number
  /** A copy used this recently is never removed. @default 60000 */
  copyGraceMs?: number
}

export interface UploadedFile {
  sha256: string
  bytes: number
  createdAt: string
}

const DIGEST = /^[0-9a-f]{64}$/

export class UploadStore {
  private readonly blobs: DirectoryBlobStore
  private readonly index: UploadIndex
  /** Digests being fetched from the bucket, so two runs naming one at once fetch it once. */
  private readonly fetching = new Map<string, Promise<boolean>>()

  /** This node's copies, when the bucket holds every upload (else the folder is the only copy: never trimmed). */
  private readonly copies: LocalCopies | undefined

  constructor(private readonly options: UploadStoreOptions) {
    this.blobs = new DirectoryBlobStore(options.root)
    const index = (this.index = options.index ?? new SqliteUploadIndex(options.root))
    this.copies = options.shared
      ? new LocalCopies({
          root: options.root,
          maxBytes: options.localCopyBytes ?? 0,
          held: (sha256) => index.heldByAnyone(sha256),
          remove: (sha256) => this.blobs.delete([sha256]),
          ...(options.copyGraceMs !== undefined ? { graceMs: options.copyGraceMs } : {}),
        })
      : undefined
  }

  /** Bytes of this node's copies of shared uploads (0 without a bucket: the folder is then the store itself). */
  localCopyBytes(): number {
    return this.copies?.bytes() ?? 0
  }

  /** Removes this node's copies past `localCopyBytes` or of uploads nobody holds; resolves to how many went. */
  trimCopies(): Promise<number> {
    return this.copies?.trim() ?? Promise.resolve(0)
  }

  /** Bytes of uploads the tenant holds. */
  used(tenant: string): Promise<number> {
    return this.index.used(tenant)
  }

  /** The tenant's upload with this digest; undefined for one it never uploaded (whoever else did). */
  async find(tenant: string, sha256: string): Promise<UploadedFile | undefined> {
    if (!DIGEST.test(sha256)) return undefined
    const held = await this.index.find(tenant, sha256)
    return held && toFile(held)
  }

  /**
   * Where the tenant's upload is on this host, for adapters that bind it in read-only (fetched from the bucket first
   * when this node has no copy). Undefined for a digest the tenant does not hold.
   */
  async locate(tenant: string, sha256: string): Promise<{ hostPath: string; bytes: number } | undefined> {
    const file = await this.find(tenant, sha256)
    if (!file) return undefined
    const hostPath = this.blobs.pathOf(sha256)
    if (fs.existsSync(hostPath)) this.copies?.used(sha256, file.bytes)
    else {
      if (!(await this.fetch(sha256))) return undefined
      this.copies?.used(sha256, file.bytes)
      // A new copy may pass the budget: older ones go, never this one.
      await this.copies?.trim(sha256)
    }
    return { hostPath, bytes: file.bytes }
  }

  async list(tenant: string): Promise<UploadedFile[]> {
    return (await this.index.list(tenant)).map(toFile)
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
    const used = await this.used(tenant)
    const room = this.options.quotaBytesPerTenant - used
    const temporary = await this.temporaryFile()
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
      const held = await this.find(tenant, sha256)
      if (held) return { ...held, reused: true }
      const target = this.blobs.pathOf(sha256)
      await fs.promises.mkdir(path.dirname(target), { recursive: true, mode: 0o755 })
      // Into the bucket before the index names it: another node that finds the digest can always fetch the bytes.
      if (this.options.shared) await this.options.shared.putFile(sha256, temporary, bytes)
      // A rename: a reader never sees half a blob; the same bytes renamed twice are still the same blob.
      await fs.promises.rename(temporary, target)
      const createdAt = Date.now()
      const outcome = await this.index.add(tenant, { sha256, bytes, createdAt }, quota)
      if (outcome === 'quota') {
        // Another upload of the tenant's took the room meanwhile: these bytes go unless some tenant holds them.
        if (!(await this.index.heldByAnyone(sha256))) {
          await this.blobs.delete([sha256])
          await this.options.shared?.delete([sha256])
        }
        throw new ExecgateError('EXECGATE_FILE_QUOTA', { tenant, used: await this.used(tenant), bytes, quota })
      }
      this.copies?.used(sha256, bytes)
      if (outcome === 'held') return { ...(await this.find(tenant, sha256))!, reused: true }
      await this.copies?.trim(sha256)
      return { sha256, bytes, createdAt: new Date(createdAt).toISOString(), reused: false }
    } finally {
      await fs.promises.rm(temporary, { force: true })
    }
  }

  /** Forgets the tenant's upload (its quota freed); the bytes go when no tenant holds the digest any more. */
  async delete(tenant: string, sha256: string): Promise<boolean> {
    if (!DIGEST.test(sha256)) return false
    const { removed, stillHeld } = await this.index.remove(tenant, sha256)
    if (removed && !stillHeld) {
      this.copies?.forget(sha256)
      await this.blobs.delete([sha256])
      await this.options.shared?.delete([sha256])
    }
    return removed
  }

  async close(): Promise<void> {
    await this.index.close()
  }

  private async temporaryFile(): Promise<string> {
    const folder = path.join(this.options.root, 'incoming')
    await fs.promises.mkdir(folder, { recursive: true })
    return path.join(folder, `${process.pid}.${randomBytes(6).toString('hex')}`)
  }

  /** This node's copy of a shared upload, from the bucket, kept only when its bytes hash to the digest. */
  private fetch(sha256: string): Promise<boolean> {
    const shared = this.options.shared
    if (!shared) return Promise.resolve(false)
    let fetching = this.fetching.get(sha256)
    if (!fetching) {
      fetching = (async () => {
        const temporary = await this.temporaryFile()
        try {
          const hash = createHash('sha256')
          const found = await shared.getFile(sha256, temporary, (chunk) => hash.update(chunk))
          if (!found) return false
          if (hash.digest('hex') !== sha256)
            throw new ExecgateError('EXECGATE_FILE_DIGEST_MISMATCH', { actual: 'other bytes', expected: sha256 })
          await fs.promises.chmod(temporary, 0o644)
          const target = this.blobs.pathOf(sha256)
          await fs.promises.mkdir(path.dirname(target), { recursive: true, mode: 0o755 })
          await fs.promises.rename(temporary, target)
          return true
        } finally {
          await fs.promises.rm(temporary, { force: true })
          this.fetching.delete(sha256)
        }
      })()
      this.fetching.set(sha256, fetching)
    }
    return fetching
  }
}

function toFile(upload: IndexedUpload): UploadedFile {
  return { sha256: upload.sha256, bytes: upload.bytes, createdAt: new Date(upload.createdAt).toISOString() }
}
