import {
  ExecgateError,
  LANGUAGES,
  errorResult,
  refusal,
  isExecgateError,
  toWorkspaceFile,
  type AdapterSandbox,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type Language,
  type SandboxFileEntry,
  type SecurityPolicy,
  type WorkspaceFile,
} from '../../core'
import { isUploadByDigest, sandboxFileBytes } from './artifact-files'
import { takeSnapshot, type SnapshotContent } from './snapshots'
import type { ExecuteOptions } from '../../execution/types'
import { normalizeWorkspacePath } from '../../workspace'
import type {
  Sandbox,
  SandboxArtifactStore,
  SandboxUploads,
  SandboxExecOptions,
  SandboxExecRequest,
  SandboxFile,
  SandboxInfo,
  SandboxSnapshot,
  SavedArtifact,
} from './sandbox-types'

/** What a live sandbox needs from its manager. */
export interface LiveSandboxHost {
  execute(request: ExecutionRequest, options: ExecuteOptions): Promise<ExecutionResult>
  /** Called once the sandbox has stopped and its backend is closed (or failed to close). */
  stopped(sandbox: LiveSandbox, reason: string, error?: unknown): void
  now(): number
  maxFileBytes: number
  /** `sandboxes.maxSnapshotBytes`: the largest snapshot taken or restored. */
  maxSnapshotBytes: number
  /** The artifact ledger's side for sandboxes; undefined when the ledger is off. */
  artifacts: SandboxArtifactStore | undefined
  uploads?: SandboxUploads
  /** Hears the end of every call (the registry's last use). */
  used(sandbox: LiveSandbox): void
  /** Which stops take a snapshot first (`sandboxes.snapshotOnStop`, `snapshotOnIdle`). */
  snapshotOn: { stop: boolean; idle: boolean }
  /** Hears every snapshot taken (the registry keeps the latest), and an automatic one that failed. */
  snapshotTaken(sandbox: LiveSandbox, snapshot: SandboxSnapshot): void
  snapshotFailed(sandbox: LiveSandbox, error: unknown): void
}

/** How long a stop waits for the call in progress (cancelled by it) before it closes the backend anyway. */
const STOP_WAIT_MS = 10_000

/**
 * One live sandbox: the adapter's handle, its policy and tenant, its calls run one at a time in arrival order (an
 * exec and a file write never overlap, so a backend needs no locking and the host's file operations never race the
 * code), and its idle timer, which only runs while no call is in flight or waiting.
 */
export class LiveSandbox implements Sandbox {
  readonly createdAt: number
  private lastUsedAt: number
  private execs = 0
  private tail: Promise<unknown> = Promise.resolve()
  private busy = 0
  private idleTimer: NodeJS.Timeout | undefined
  private readonly life = new AbortController()
  private stopping: Promise<void> | undefined
  private stopReason: string | undefined
  private latestSnapshot: SandboxSnapshot | undefined

  constructor(
    readonly id: string,
    readonly tenant: string,
    readonly adapter: string,
    private readonly handle: AdapterSandbox,
    readonly policy: SecurityPolicy,
    readonly idleTimeoutMs: number,
    private readonly host: LiveSandboxHost,
  ) {
    this.createdAt = this.lastUsedAt = host.now()
    this.armIdle()
  }

  get live(): boolean {
    return this.stopReason === undefined
  }

  info(): SandboxInfo {
    return {
      id: this.id,
      tenant: this.tenant,
      adapter: this.adapter,
      languages: this.handle.languages,
      createdAt: new Date(this.createdAt).toISOString(),
      lastUsedAt: new Date(this.lastUsedAt).toISOString(),
      expiresAt: new Date(this.lastUsedAt + this.idleTimeoutMs).toISOString(),
      idleTimeoutMs: this.idleTimeoutMs,
      execs: this.execs,
      policy: this.policy,
      ...(this.latestSnapshot ? { lastSnapshot: this.latestSnapshot } : {}),
    }
  }

  get lastSnapshot(): SandboxSnapshot | undefined {
    return this.latestSnapshot
  }

  private stoppedError(): ExecgateError {
    return new ExecgateError('EXECGATE_SANDBOX_STOPPED', { id: this.id, reason: this.stopReason ?? 'stopped' })
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer)
    if (!this.live || this.busy > 0) return
    this.idleTimer = setTimeout(
      () => void this.stopFor(`idle for ${this.idleTimeoutMs} ms`, this.host.snapshotOn.idle ? 'idle' : undefined),
      this.idleTimeoutMs,
    )
    // An idle sandbox must not keep a process alive that has nothing else to do.
    this.idleTimer.unref()
  }

  /** Runs `work` after every call before it; the idle clock stops while calls are in flight or waiting. */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    this.busy++
    clearTimeout(this.idleTimer)
    const run = this.tail.then(work, work)
    this.tail = run.catch(() => undefined)
    return run.finally(() => {
      this.busy--
      this.lastUsedAt = this.host.now()
      this.armIdle()
      if (this.live) this.host.used(this)
    })
  }

  async exec(input: string | SandboxExecRequest, options: SandboxExecOptions = {}): Promise<ExecutionResult> {
    const request = typeof input === 'string' ? { command: input } : input
    const problem = execProblem(request)
    if (problem) return errorResult('invalid_request', this.adapter, new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: problem }))
    if (!this.live) return errorResult('invalid_request', this.adapter, this.stoppedError())
    return this.serial(async () => {
      if (!this.live) return errorResult('invalid_request', this.adapter, this.stoppedError())
      if (options.signal?.aborted)
        return refusal('cancelled', this.adapter, `[execgate] the exec was cancelled before it started in sandbox ${this.id}`, 'Cancelled')
      for (const [index, file] of (request.files ?? []).entries()) {
        try {
          const relative = normalizeWorkspacePath(file.path)
          const upload = isUploadByDigest(file) ? await this.locateUpload(file.sha256) : undefined
          if (upload && this.handle.mountFile) await this.handle.mountFile({ path: relative, ...upload })
          else await this.handle.writeFile(relative, await this.bytesOf(file))
        } catch (error) {
          // An unknown upload or artifact, or the ledger off, answers with its own code, as the file calls do.
          const known = (['EXECGATE_NOT_FOUND', 'EXECGATE_FILE_NOT_FOUND', 'EXECGATE_LEDGER_DISABLED'] as const).find((code) =>
            isExecgateError(error, code),
          )
          if (known) return errorResult('invalid_request', this.adapter, error as ExecgateError)
          const message = error instanceof Error ? error.message.replace(/^\[execgate\] /, '') : String(error)
          return errorResult(
            'invalid_request',
            this.adapter,
            new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `files[${index}]: ${message}` }),
          )
        }
      }
      const signal = options.signal ? AbortSignal.any([options.signal, this.life.signal]) : this.life.signal
      const language: Language = request.command !== undefined ? 'bash' : request.language!
      const code = request.command ?? request.code!
      this.execs++
      // The service may answer for an adapter that overstays its deadline (its backstop); the next call still waits
      // for the adapter's own answer, so the backend never runs two calls at once.
      let inAdapter: Promise<unknown> = Promise.resolve()
      const handle: AdapterSandbox = Object.assign(Object.create(this.handle) as AdapterSandbox, {
        exec: (execRequest: ExecutionRequest, context: ExecutionContext) => {
          const running = this.handle.exec(execRequest, context)
          inAdapter = running.catch(() => undefined)
          return running
        },
      })
      const result = await this.host.execute(
        {
          language,
          code,
          adapter: this.adapter,
          ...(request.stdin !== undefined ? { stdin: request.stdin } : {}),
          ...(request.timeoutMs !== undefined ? { timeoutMs: request.timeoutMs } : {}),
          ...(request.memoryMb !== undefined ? { memoryMb: request.memoryMb } : {}),
          ...(request.policy ? { policy: request.policy } : {}),
          ...(request.traceId ? { traceId: request.traceId } : {}),
          ...(request.lane ? { lane: request.lane } : {}),
          ...(request.priority !== undefined ? { priority: request.priority } : {}),
        },
        {
          basePolicy: this.policy,
          sandbox: { id: this.id, adapter: this.adapter, handle },
          tenant: this.tenant,
          signal,
          ...(options.onOutput ? { onOutput: options.onOutput } : {}),
          ...(options.onRichOutput ? { onRichOutput: options.onRichOutput } : {}),
        },
      )
      await inAdapter
      return result
    })
  }

  /** A file operation: refused on a stopped sandbox, run in turn with the execs. */
  private fileCall<T>(work: () => Promise<T>): Promise<T> {
    if (!this.live) return Promise.reject(this.stoppedError())
    return this.serial(() => (this.live ? work() : Promise.reject(this.stoppedError())))
  }

  /** The tenant's upload with this digest as a backend that binds files needs it; undefined otherwise. */
  private async locateUpload(sha256: string): Promise<{ sha256: string; bytes: number; hostPath: string } | undefined> {
    if (!this.handle.mountFile || !this.host.uploads?.locate) return undefined
    const digest = sha256.replace(/^sha256:/, '')
    const found = await this.host.uploads.locate(digest, this.tenant)
    return found && { sha256: digest, bytes: found.bytes, hostPath: found.hostPath }
  }

  /** A file's bytes: its content, or by digest the tenant's upload, else its artifact from the ledger. */
  private bytesOf(file: SandboxFile): Promise<Buffer> {
    return sandboxFileBytes(file, this.tenant, this.host.artifacts, this.host.uploads)
  }

  /**
   * Binds the tenant's upload in read-only where the backend can (`mountFile`: the process tier), so a file of any
   * size costs no copy; false when it cannot (no such upload, or a backend that copies), and the bytes are written.
   */
  private async mountUpload(relative: string, sha256: string): Promise<boolean> {
    const upload = await this.locateUpload(sha256)
    if (!upload) return false
    await this.fileCall(() => this.handle.mountFile!({ path: relative, ...upload }))
    return true
  }

  async writeFile(path: string, content: string | Uint8Array | { sha256: string }): Promise<void> {
    const relative = normalizeWorkspacePath(path)
    if (typeof content !== 'string' && !(content instanceof Uint8Array) && typeof content?.sha256 !== 'string')
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', {
        detail: 'a file is a string, bytes, or { sha256 } of an upload or an artifact',
      })
    if (typeof content !== 'string' && !(content instanceof Uint8Array) && (await this.mountUpload(relative, content.sha256))) return
    const bytes =
      typeof content === 'string'
        ? Buffer.from(content, 'utf8')
        : content instanceof Uint8Array
          ? content
          : await this.bytesOf({ path: relative, sha256: content.sha256 })
    if (bytes.byteLength > this.host.maxFileBytes)
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `${relative} is ${bytes.byteLength} bytes; a file may hold ${this.host.maxFileBytes} (workspace.maxFileBytes)`,
      })
    return this.fileCall(() => this.handle.writeFile(relative, bytes))
  }

  async writeFiles(files: readonly SandboxFile[]): Promise<void> {
    for (const file of files) await this.writeFile(file.path, isUploadByDigest(file) ? { sha256: file.sha256 } : await this.bytesOf(file))
  }

  async readFile(path: string): Promise<Buffer> {
    const relative = normalizeWorkspacePath(path)
    return this.fileCall(async () => {
      const content = await this.handle.readFile(relative)
      if (!content) throw new ExecgateError('EXECGATE_WORKSPACE_NOT_FOUND', { path: relative })
      return Buffer.from(content)
    })
  }

  async readFiles(paths?: readonly string[]): Promise<WorkspaceFile[]> {
    const wanted = paths ?? (await this.listFiles()).map((entry) => entry.path)
    const files: WorkspaceFile[] = []
    for (const path of wanted) files.push(toWorkspaceFile(normalizeWorkspacePath(path), await this.readFile(path)))
    return files
  }

  listFiles(): Promise<SandboxFileEntry[]> {
    return this.fileCall(() => this.handle.listFiles())
  }

  async deleteFile(path: string): Promise<boolean> {
    const relative = normalizeWorkspacePath(path)
    return this.fileCall(() => this.handle.deleteFile(relative))
  }

  async saveArtifact(path: string): Promise<SavedArtifact> {
    // Said before the file is read: with the ledger off, no file could ever be saved.
    if (!this.host.artifacts) throw new ExecgateError('EXECGATE_LEDGER_DISABLED')
    const content = await this.readFile(path)
    return this.host.artifacts.save({
      tenant: this.tenant,
      sandboxId: this.id,
      adapter: this.adapter,
      path: normalizeWorkspacePath(path),
      content,
    })
  }

  snapshot(): Promise<SandboxSnapshot> {
    // Said before anything is read: with the ledger off, there is nowhere to keep it.
    if (!this.host.artifacts) return Promise.reject(new ExecgateError('EXECGATE_LEDGER_DISABLED'))
    return this.fileCall(() => this.archive('requested'))
  }

  private async archive(reason: SandboxSnapshot['reason']): Promise<SandboxSnapshot> {
    const snapshot = await takeSnapshot(
      this.handle,
      { id: this.id, tenant: this.tenant, adapter: this.adapter },
      reason,
      this.host.artifacts!,
      this.host.maxSnapshotBytes,
    )
    this.latestSnapshot = snapshot
    this.host.snapshotTaken(this, snapshot)
    return snapshot
  }

  /**
   * Restores a snapshot into this sandbox, just opened: a container archive in one call where the backend takes one
   * (docker), else the workspace's files one by one.
   */
  async restore(content: SnapshotContent): Promise<void> {
    const archive = content.containerArchive
    if (archive && this.handle.restoreArchive) return this.fileCall(() => this.handle.restoreArchive!(archive, this.host.maxSnapshotBytes))
    for (const file of content.files) await this.writeFile(file.path, file.content)
  }

  stop(): Promise<void> {
    return this.stopFor('stopped by the caller', this.host.snapshotOn.stop ? 'stop' : undefined)
  }

  /**
   * Stops the sandbox: new calls are refused at once, the call in progress is cancelled (its exec answers
   * `cancelled`), waiting calls answer `EXECGATE_SANDBOX_STOPPED`, then the backend is closed.
   */
  stopFor(reason: string, snapshot?: 'stop' | 'idle'): Promise<void> {
    if (this.stopping) return this.stopping
    this.stopReason = reason
    clearTimeout(this.idleTimer)
    this.life.abort(new Error(`sandbox ${this.id} stopped: ${reason}`))
    const settled = this.tail
    return (this.stopping = (async () => {
      let timer: NodeJS.Timeout | undefined
      await Promise.race([settled, new Promise((resolve) => (timer = setTimeout(resolve, STOP_WAIT_MS)))])
      clearTimeout(timer)
      // The last look at the workspace before the backend closes; a failure is logged and the stop goes on.
      if (snapshot && this.host.artifacts) await this.archive(snapshot).catch((error: unknown) => this.host.snapshotFailed(this, error))
      try {
        await this.handle.close()
        this.host.stopped(this, reason)
      } catch (error) {
        this.host.stopped(this, reason, error)
      }
    })())
  }
}

/** What is wrong with an exec request, in words naming the field, or undefined. */
function execProblem(request: SandboxExecRequest): string | undefined {
  if (typeof request !== 'object' || request === null) return 'an exec is a command string or { command } or { language, code }'
  if (request.command !== undefined) {
    if (typeof request.command !== 'string' || !request.command.trim()) return 'command must be a non-empty string'
    if (request.code !== undefined || (request.language !== undefined && request.language !== 'bash'))
      return 'give either command, or language and code'
    return undefined
  }
  if (typeof request.code !== 'string' || !request.code) return 'command, or language and code, is required'
  if (!(LANGUAGES as readonly unknown[]).includes(request.language)) return `language must be one of: ${LANGUAGES.join(', ')}`
  return undefined
}
