import type { UploadedFile } from './client-types'
import { isExecgateClientError } from './client-error'
import type { CallOptions, HttpTransport } from './http-transport'
import { Sha256 } from './sha256'

/** What `client.uploads.put` takes: bytes, text, or a Blob (in Node `await fs.openAsBlob(path)`, read as it is sent). */
export type UploadSource = Uint8Array | ArrayBuffer | Blob | string

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
      typeof source === 'string' ? new TextEncoder().encode(source) : source instanceof ArrayBuffer ? new Uint8Array(source) : source
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
