import { randomBytes } from 'node:crypto'
import fsSync, { promises as fs } from 'node:fs'
import path from 'node:path'
import { S3Objects, type S3Settings } from '../../workspace/s3-objects'

/**
 * Where artifacts' bytes live, by SHA-256: a local directory (the default) or an S3-compatible bucket. Writes are
 * idempotent (the same digest is the same bytes), so a blob written twice, by two processes, is still one blob.
 */
export interface BlobStore {
  readonly kind: 'directory' | 's3'
  has(sha256: string): Promise<boolean>
  put(sha256: string, bytes: Buffer, mediaType: string): Promise<void>
  get(sha256: string): Promise<Buffer | undefined>
  delete(sha256s: readonly string[]): Promise<void>
}

const DIGEST = /^[0-9a-f]{64}$/

function checkDigest(sha256: string): string {
  // A digest names a file or a key: anything else (a path, `..`) must never reach the filesystem or the bucket.
  if (!DIGEST.test(sha256)) throw new Error(`[execgate] [ledger] not a SHA-256 digest: ${JSON.stringify(sha256).slice(0, 80)}`)
  return sha256
}

/**
 * Blobs up to this size are written with synchronous calls. The writer runs in its own thread (fabric.ledger.writer
 * `thread`, the default), where blocking costs no request anything, and a small file's five calls take ~30 µs there,
 * where each call through libuv's thread pool is two cross-thread wake-ups: a 3-step plan's version document cost
 * ~1.3 ms of CPU that way, on a 2-core machine taken from the runs beside it. Larger blobs (a chart, a dataset) keep
 * the pool, so an inline writer never stalls its thread on one.
 */
const SYNC_WRITE_BYTES = 64 * 1024

/** `<root>/ab/<sha256>`: 256 folders, so no folder grows past what a filesystem lists quickly. */
export class DirectoryBlobStore implements BlobStore {
  readonly kind = 'directory' as const
  /** Folders made (or found) by this store: each `mkdir` once, not before every blob. */
  private readonly folders = new Set<string>()

  constructor(readonly root: string) {}

  /** The blob's file: `<root>/ab/<sha256>`. */
  pathOf(sha256: string): string {
    return path.join(this.root, checkDigest(sha256).slice(0, 2), sha256)
  }

  private file(sha256: string): string {
    return this.pathOf(sha256)
  }

  async has(sha256: string): Promise<boolean> {
    return fs.access(this.file(sha256)).then(
      () => true,
      () => false,
    )
  }

  async put(sha256: string, bytes: Buffer): Promise<void> {
    const file = this.file(sha256)
    if (bytes.length > SYNC_WRITE_BYTES) return this.putLarge(sha256, file, bytes)
    if (fsSync.existsSync(file)) return
    const folder = path.dirname(file)
    if (!this.folders.has(folder)) {
      fsSync.mkdirSync(folder, { recursive: true })
      this.folders.add(folder)
    }
    const temporary = temporaryOf(file)
    try {
      fsSync.writeFileSync(temporary, bytes)
    } catch (error) {
      // The folder was removed since it was made here (by hand, a test): made again, once.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      fsSync.mkdirSync(folder, { recursive: true })
      fsSync.writeFileSync(temporary, bytes)
    }
    fsSync.renameSync(temporary, file)
  }

  private async putLarge(sha256: string, file: string, bytes: Buffer): Promise<void> {
    if (await this.has(sha256)) return
    await fs.mkdir(path.dirname(file), { recursive: true })
    const temporary = temporaryOf(file)
    await fs.writeFile(temporary, bytes)
    await fs.rename(temporary, file)
  }

  async get(sha256: string): Promise<Buffer | undefined> {
    return fs.readFile(this.file(sha256)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return undefined
      throw error
    })
  }

  async delete(sha256s: readonly string[]): Promise<void> {
    await Promise.all(sha256s.map((sha256) => fs.rm(this.file(sha256), { force: true })))
  }
}

/** Written aside and renamed: a reader never sees half a blob, and a crash leaves only a stray temp file. */
function temporaryOf(file: string): string {
  return `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
}

/** `<prefix>blobs/<sha256>` in the bucket, with the artifact's media type as its Content-Type. */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const
  readonly objects: S3Objects

  constructor(where: S3Objects | S3Settings) {
    this.objects = (where instanceof S3Objects ? where : new S3Objects(where)).under('blobs/')
  }

  has(sha256: string): Promise<boolean> {
    return this.objects.has(checkDigest(sha256))
  }

  async put(sha256: string, bytes: Buffer, mediaType: string): Promise<void> {
    if (await this.has(sha256)) return
    await this.objects.put(sha256, bytes, mediaType)
  }

  async get(sha256: string): Promise<Buffer | undefined> {
    return (await this.objects.get(checkDigest(sha256)))?.body
  }

  async delete(sha256s: readonly string[]): Promise<void> {
    if (sha256s.length) await this.objects.delete(sha256s.map(checkDigest))
  }
}
