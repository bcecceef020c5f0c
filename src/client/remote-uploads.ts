import type { UploadedFile } from './client-types'
import { ExecgateClientError, isExecgateClientError } from './client-error'
import type { CallOptions, HttpTransport } from './http-transport'
import { Sha256 } from './sha256'

/**
 * What `client.uploads.put` takes: bytes, text, a Blob, or (in Node) a file on disk as `{ path }` or a `file:` URL,
 * which is hashed and sent as it is read from disk (`fs.openAsBlob`), never held whole in memory.
 */
export type UploadSource = Uint8Array | ArrayBuffer | Blob | string | { path: string } | URL

export interface UploadOptions extends CallOptions {
  /** The bytes' digest when the caller knows it already: the client then does not hash them. */
  sha256?: string
}

/** An upload as `put` answers it: `reused` when the server already held those bytes for this tenant. */
export type UploadResult = UploadedFile & { reused: boolean }

/**
 * `client.uploads`: files uploaded once and named by digest after (`PUT /v1/files`, docs/data.md#uploads-by-digest).
 * `put` hashes the bytes first and asks the server whether the tenant holds that digest; only when it does not are
 * the bytes sent, with the digest for the server to check. A request, task, plan step or sandbox then names the file
 * as `{ path, sha256 }` (`uploads.reference(path, uploaded)`).
 */
export class RemoteUploads {
  constructor(private readonly http: HttpTransport) {}

  async put(source: UploadSource, options: UploadOptions = {}): Promise<UploadResult> {
    const { sha256: known, ...call } = options
    const body =
      typeof source === 'string'
        ? new TextEncoder().encode(source)
        : source instanceof ArrayBuffer
          ? new Uint8Array(source)
          : source instanceof Uint8Array || source instanceof Blob
            ? source
            : await fileBlob(source)
    const sha256 = known?.replace(/^sha256:/, '') ?? (await digestOf(body))
    const held = await this.get(sha256, call)
    if (held) return { ...held, reused: true }
    return this.http.json<UploadResult>('uploadFile', { bytes: body, query: { sha256 } }, call)
  }

  /** The tenant's upload with this digest, or undefined (another tenant's digest answers alike). */
  async get(sha256: string, options?: CallOptions): Promise<UploadedFile | undefined> {
    try {
      return await this.http.json<UploadedFile>('getUpload', { params: { sha256: sha256.replace(/^sha256:/, '') } }, options)
    } catch (error) {
      if (isExecgateClientError(error, 'EXECGATE_FILE_NOT_FOUND')) return undefined
      throw error
    }
  }

  /** The tenant's uploads, the bytes they hold and the tenant's quota. */
  list(options?: CallOptions): Promise<{ files: UploadedFile[]; usedBytes: number; quotaBytes: number }> {
    return this.http.json('listUploads', {}, options)
  }

  /** Forgets the upload and frees its quota; false when the tenant held no such digest. */
  async delete(sha256: string, options?: CallOptions): Promise<boolean> {
    try {
      await this.http.send('deleteUpload', { params: { sha256: sha256.replace(/^sha256:/, '') } }, options)
      return true
    } catch (error) {
      if (isExecgateClientError(error, 'EXECGATE_FILE_NOT_FOUND')) return false
      throw error
    }
  }

  /** How a request names an upload: `files: [client.uploads.reference('sales.csv', uploaded)]`. */
  reference(path: string, uploaded: { sha256: string }): { path: string; sha256: string } {
    return { path, sha256: uploaded.sha256 }
  }
}

/** Node's fs module where the runtime has one, without importing it: the client also runs in browsers and Deno. */
interface NodeFs {
  openAsBlob?(path: string | URL): Promise<Blob>
}

/**
 * A file on disk as a Blob that reads it lazily (Node 20.16+: `process.getBuiltinModule('node:fs').openAsBlob`), so
 * hashing and sending stream it from disk. Elsewhere the caller is told to pass a Blob of its own.
 */
async function fileBlob(source: { path: string } | URL): Promise<Blob> {
  const where = source instanceof URL ? source : source?.path
  if (!(where instanceof URL) && (typeof where !== 'string' || where === ''))
    throw new ExecgateClientError({
      code: 'EXECGATE_REQUEST_INVALID',
      message: 'uploads.put takes bytes, text, a Blob, { path } or a file: URL',
      status: 0,
      attempts: 0,
    })
  const runtime = (globalThis as { process?: { getBuiltinModule?(name: string): unknown } }).process
  const fs = runtime?.getBuiltinModule?.('node:fs') as NodeFs | undefined
  if (!fs?.openAsBlob)
    throw new ExecgateClientError({
      code: 'EXECGATE_REQUEST_INVALID',
      message: 'uploads.put({ path }) needs Node 20.16 or later (fs.openAsBlob); elsewhere pass a Blob or bytes',
      status: 0,
      attempts: 0,
    })
  try {
    return await fs.openAsBlob(where)
  } catch (error) {
    throw new ExecgateClientError({
      code: 'EXECGATE_REQUEST_INVALID',
      message: `uploads.put could not open ${String(where)}: ${(error as Error).message}`,
      status: 0,
      attempts: 0,
      cause: error,
    })
  }
}

/** WebCrypto for bytes in memory where there is one; a Blob is hashed as it streams, never read whole. */
async function digestOf(body: Uint8Array | Blob): Promise<string> {
  if (body instanceof Uint8Array) {
    const subtle = (globalThis as { crypto?: { subtle?: { digest(algorithm: string, data: Uint8Array): Promise<ArrayBuffer> } } }).crypto
      ?.subtle
    if (subtle) {
      const digest = new Uint8Array(await subtle.digest('SHA-256', body))
      return Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('')
    }
    return new Sha256().update(body).hex()
  }
  const hash = new Sha256()
  const reader = body.stream().getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return hash.hex()
    hash.update(value)
  }
}
