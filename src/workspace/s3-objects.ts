import type { S3Client } from '@aws-sdk/client-s3'
import fs from 'node:fs'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { requireOptional } from '../core/optional-dependency'

/** Where a bucket is and how to reach it: AWS S3, or any S3-compatible server (MinIO, Ceph, s3rver) by `endpoint`. */
export interface S3Settings {
  bucket: string
  /** Prepended to every key, e.g. `execgate/`. @default '' */
  prefix?: string
  /** An S3-compatible server's URL; empty for AWS. */
  endpoint?: string
  /** @default 'us-east-1' */
  region?: string
  /** `bucket` in the path instead of the host name; most S3-compatible servers need it. @default true with an endpoint */
  forcePathStyle?: boolean
  /** Credentials; without them the SDK's default chain (environment, profile, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  /** A client to use instead of creating one (tests, an embedder's own configuration). */
  client?: S3Client
}

type S3Module = typeof import('@aws-sdk/client-s3')

/** Loaded at first use, so a process that never touches a bucket never loads the SDK. */
function loadSdk(): S3Module {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return requireOptional('s3', () => require('@aws-sdk/client-s3') as S3Module)
}

function isNotFound(error: unknown): boolean {
  const failure = error as { name?: string; $metadata?: { httpStatusCode?: number } }
  return failure?.name === 'NoSuchKey' || failure?.name === 'NotFound' || failure?.$metadata?.httpStatusCode === 404
}

/** One object as a listing returns it, its key relative to the prefix listed. */
export interface S3Entry {
  key: string
  size: number
}

/**
 * The few object operations the workspace and the artifact ledger need, over one bucket and key prefix. Bodies are
 * whole Buffers, or a file of known length (`putFile`): the SDK then sends a plain Content-Length upload, which every
 * S3-compatible server accepts.
 */
export class S3Objects {
  readonly client: S3Client
  readonly bucket: string
  readonly prefix: string
  private readonly sdk: S3Module

  constructor(private readonly settings: S3Settings) {
    this.sdk = loadSdk()
    this.bucket = settings.bucket
    this.prefix = settings.prefix ?? ''
    this.client =
      settings.client ??
      new this.sdk.S3Client({
        region: settings.region || 'us-east-1',
        ...(settings.endpoint ? { endpoint: settings.endpoint } : {}),
        forcePathStyle: settings.forcePathStyle ?? !!settings.endpoint,
        ...(settings.credentials ? { credentials: settings.credentials } : {}),
        // Recent SDKs add CRC32 checksums to every request and validate them on every response; S3-compatible
        // servers that predate that (older MinIO, s3rver) may refuse or omit them. Only where S3 requires one.
        ...(settings.endpoint
          ? { requestChecksumCalculation: 'WHEN_REQUIRED' as const, responseChecksumValidation: 'WHEN_REQUIRED' as const }
          : {}),
      })
  }

  /** A sibling over a key prefix under this one (same client). */
  under(prefix: string): S3Objects {
    return new S3Objects({ ...this.settings, client: this.client, prefix: this.prefix + prefix })
  }

  async get(key: string): Promise<{ body: Buffer; contentType?: string } | undefined> {
    try {
      const answer = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }))
      const bytes = await answer.Body!.transformToByteArray()
      return { body: Buffer.from(bytes), ...(answer.ContentType ? { contentType: answer.ContentType } : {}) }
    } catch (error) {
      if (isNotFound(error)) return undefined
      throw error
    }
  }

  async has(key: string): Promise<boolean> {
    try {
      await this.client.send(new this.sdk.HeadObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }))
      return true
    } catch (error) {
      if (isNotFound(error)) return false
      throw error
    }
  }

  async put(key: string, body: Buffer, contentType = 'application/octet-stream'): Promise<void> {
    await this.client.send(
      new this.sdk.PutObjectCommand({
        Bucket: this.bucket,
        Key: this.prefix + key,
        Body: body,
        ContentType: contentType,
        ContentLength: body.length,
      }),
    )
  }

  /**
   * A file's bytes as the object, streamed from disk with its Content-Length (a plain upload, as `put`'s, without
   * holding the file in memory): uploads by digest can be gigabytes.
   */
  async putFile(key: string, file: string, bytes: number, contentType = 'application/octet-stream'): Promise<void> {
    await this.client.send(
      new this.sdk.PutObjectCommand({
        Bucket: this.bucket,
        Key: this.prefix + key,
        Body: fs.createReadStream(file),
        ContentType: contentType,
        ContentLength: bytes,
      }),
    )
  }

  /** The object streamed into `file` (each chunk shown to `onChunk` on the way); false when there is none. */
  async getFile(key: string, file: string, onChunk: (chunk: Buffer) => void): Promise<boolean> {
    let body: Readable
    try {
      const answer = await this.client.send(new this.sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }))
      body = answer.Body as Readable
    } catch (error) {
      if (isNotFound(error)) return false
      throw error
    }
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        onChunk(chunk)
        done(null, chunk)
      },
    })
    await pipeline(body, tap, fs.createWriteStream(file, { mode: 0o600 }))
    return true
  }

  async delete(keys: readonly string[]): Promise<void> {
    // DeleteObjects takes at most 1000 keys per call.
    for (let start = 0; start < keys.length; start += 1000) {
      const objects = keys.slice(start, start + 1000).map((key) => ({ Key: this.prefix + key }))
      await this.client.send(new this.sdk.DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: objects, Quiet: true } }))
    }
  }

  /** Every object under `prefix` (relative to this one's), up to `limit`. */
  async list(prefix = '', limit = Number.POSITIVE_INFINITY): Promise<S3Entry[]> {
    const entries: S3Entry[] = []
    let token: string | undefined
    do {
      const page = await this.client.send(
        new this.sdk.ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken: token }),
      )
      for (const item of page.Contents ?? []) {
        if (entries.length >= limit) return entries
        if (item.Key) entries.push({ key: item.Key.slice(this.prefix.length), size: item.Size ?? 0 })
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined
    } while (token)
    return entries
  }

  /** Creates the bucket when it does not exist yet (tests and local servers; production buckets are made ahead). */
  async ensureBucket(): Promise<void> {
    try {
      await this.client.send(new this.sdk.HeadBucketCommand({ Bucket: this.bucket }))
    } catch (error) {
      if (!isNotFound(error)) throw error
      await this.client.send(new this.sdk.CreateBucketCommand({ Bucket: this.bucket }))
    }
  }
}
