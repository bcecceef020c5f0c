import type { ExecutionResult, SandboxExecRequest, SandboxFileEntry, SandboxInfo, SandboxSnapshot, SavedArtifact } from './client-types'
import { isExecgateClientError } from './client-error'
import { resultFromError } from './error-result'
import type { CallOptions, HttpTransport } from './http-transport'
import { collectExecution, toExecutionEvents } from './execution-events'

/** Options of one exec: cancellation, and output as it is produced (the exec is then streamed). */
export interface RemoteExecOptions extends CallOptions {
  onOutput?: (stream: 'stdout' | 'stderr', chunk: string) => void
}

/**
 * A sandbox on the server, as the library's `Sandbox` is in-process: `exec` never throws (every outcome is an
 * ExecutionResult), the file calls throw an ExecgateClientError when refused.
 */
export class RemoteSandbox {
  constructor(
    private readonly http: HttpTransport,
    readonly id: string,
    private latest: SandboxInfo,
  ) {}

  get adapter(): string {
    return this.latest.adapter
  }

  /** The sandbox as last seen; `refresh()` asks the server again. */
  info(): SandboxInfo {
    return this.latest
  }

  async refresh(options?: CallOptions): Promise<SandboxInfo> {
    this.latest = await this.http.json<SandboxInfo>('getSandbox', { params: { id: this.id } }, options)
    return this.latest
  }

  async exec(input: string | SandboxExecRequest, options: RemoteExecOptions = {}): Promise<ExecutionResult> {
    const body = typeof input === 'string' ? { command: input } : input
    try {
      if (!options.onOutput) return await this.http.json<ExecutionResult>('execSandbox', { params: { id: this.id }, json: body }, options)
      return await collectExecution(
        toExecutionEvents(this.http.events('execSandbox', { params: { id: this.id }, json: body }, options)),
        options.onOutput,
      )
    } catch (error) {
      if (isExecgateClientError(error)) return resultFromError(error, body.traceId, this.latest.adapter)
      throw error
    }
  }

  async writeFile(path: string, content: string | Uint8Array | { sha256: string }, options?: CallOptions): Promise<void> {
    const init =
      typeof content === 'object' && 'sha256' in content ? { query: { sha256: content.sha256 } } : { bytes: content as string | Uint8Array }
    await this.http.send('writeSandboxFile', { params: { id: this.id, path }, ...init }, options)
  }

  async readFile(path: string, options?: CallOptions): Promise<Uint8Array> {
    return (await this.http.bytes('readSandboxFile', { params: { id: this.id, path } }, options)).content
  }

  async readText(path: string, options?: CallOptions): Promise<string> {
    return new TextDecoder().decode(await this.readFile(path, options))
  }

  async listFiles(options?: CallOptions): Promise<SandboxFileEntry[]> {
    return (await this.http.json<{ files: SandboxFileEntry[] }>('listSandboxFiles', { params: { id: this.id } }, options)).files
  }

  /** False when there was no such file. */
  async deleteFile(path: string, options?: CallOptions): Promise<boolean> {
    try {
      await this.http.send('deleteSandboxFile', { params: { id: this.id, path } }, options)
      return true
    } catch (error) {
      if (isExecgateClientError(error, 'EXECGATE_NOT_FOUND')) return false
      throw error
    }
  }

  /** Stores the file in the artifact ledger; `client.files.get(sha256)` then reads it. */
  async saveArtifact(path: string, options?: CallOptions): Promise<SavedArtifact> {
    return this.http.json<SavedArtifact>('saveSandboxArtifact', { params: { id: this.id }, json: { path } }, options)
  }

  /** Snapshots the workspace into the ledger; `client.sandboxes.start({ from: snapshot.id })` restores it on any node. */
  async snapshot(options?: CallOptions): Promise<SandboxSnapshot> {
    return this.http.json<SandboxSnapshot>('snapshotSandbox', { params: { id: this.id } }, options)
  }

  async stop(options?: CallOptions): Promise<void> {
    await this.http.send('stopSandbox', { params: { id: this.id } }, options)
  }
}
