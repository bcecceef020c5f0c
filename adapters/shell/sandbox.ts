import {
  ExecgateError,
  createResult,
  toWorkspaceFile,
  workspaceFileBytes,
  type AdapterSandbox,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type Language,
  type SandboxFileEntry,
  type SandboxOpenOptions,
  type WorkspaceFile,
} from '../../src/core'
import type { ShellWorkspaceChanges } from './protocol'

type RunScript = (
  request: ExecutionRequest,
  context: ExecutionContext,
  files: WorkspaceFile[],
  maxWorkspaceBytes: number,
) => Promise<{ result: ExecutionResult; workspace?: ShellWorkspaceChanges }>

/**
 * A native shell sandbox: its workspace lives here, in this process's memory (bounded by `workspace.*` limits), and
 * each exec is a script on the shell adapter's pool of warm processes, handed the workspace and answering with what
 * it changed. A process killed at a limit takes nothing with it: the workspace is kept here, so an exec stopped by a
 * limit (time, memory, output, cancel) leaves it exactly as it was before that exec.
 */
export class ShellSandbox implements AdapterSandbox {
  readonly languages: readonly Language[] = ['bash']
  private readonly files = new Map<string, Buffer>()
  private closed = false

  constructor(
    readonly id: string,
    private readonly limits: SandboxOpenOptions['limits'],
    private readonly runScript: RunScript,
  ) {}

  private totalBytes(): number {
    let total = 0
    for (const content of this.files.values()) total += content.length
    return total
  }

  async exec(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    if (this.closed) return createResult('unavailable', 'shell', { message: `[execgate] [shell] sandbox ${this.id} is closed` })
    if (request.language !== 'bash')
      return createResult('invalid_request', 'shell', { message: `[execgate] [shell] a native sandbox runs bash, not ${request.language}` })
    const files = [...this.files].map(([path, content]) => toWorkspaceFile(path, content))
    const { result, workspace } = await this.runScript(request, context, files, this.limits.maxTotalBytes)
    if (workspace && !this.closed) {
      const count = new Set([...this.files.keys(), ...workspace.changed.map((file) => file.path)]).size - workspace.deleted.length
      const tooBig = workspace.changed.find((file) => workspaceFileBytes(file).length > this.limits.maxFileBytes)
      if (count > this.limits.maxFiles || tooBig) {
        const detail = tooBig
          ? `${tooBig.path} is over ${this.limits.maxFileBytes} bytes (workspace.maxFileBytes)`
          : `the workspace would hold ${count} files, over workspace.maxFiles (${this.limits.maxFiles})`
        return createResult('error', 'shell', {
          ...result,
          error: { type: 'WorkspaceLimit', message: `${detail}; the exec's changes were dropped` },
          message: `[execgate] [shell] ${detail}; the exec's changes were dropped`,
        })
      }
      for (const path of workspace.deleted) this.files.delete(path)
      for (const file of workspace.changed) this.files.set(file.path, workspaceFileBytes(file))
    }
    return result
  }

  async writeFile(path: string, content: Uint8Array): Promise<void> {
    if (this.closed) throw new ExecgateError('EXECGATE_ADAPTER_UNAVAILABLE', { name: 'shell', detail: `sandbox ${this.id} is closed` })
    if (content.byteLength > this.limits.maxFileBytes)
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `${path} is ${content.byteLength} bytes; a file may hold ${this.limits.maxFileBytes} (workspace.maxFileBytes)`,
      })
    const previous = this.files.get(path)?.length ?? 0
    if (this.totalBytes() - previous + content.byteLength > this.limits.maxTotalBytes)
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `the workspace would hold more than ${this.limits.maxTotalBytes} bytes (workspace.maxTotalBytes)`,
      })
    if (!this.files.has(path) && this.files.size >= this.limits.maxFiles)
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `the workspace already holds ${this.limits.maxFiles} files (workspace.maxFiles)`,
      })
    // A file and a folder cannot share a path, in just-bash's tree as on disk.
    const clash = [...this.files.keys()].find((existing) => existing.startsWith(`${path}/`) || path.startsWith(`${existing}/`))
    if (clash) throw new ExecgateError('EXECGATE_WORKSPACE_PATH', { path, reason: `${clash} is in the way` })
    this.files.set(path, Buffer.from(content))
  }

  async readFile(path: string): Promise<Uint8Array | undefined> {
    return this.files.get(path)
  }

  async deleteFile(path: string): Promise<boolean> {
    return this.files.delete(path)
  }

  async listFiles(): Promise<SandboxFileEntry[]> {
    return [...this.files].map(([path, content]) => ({ path, size: content.length })).sort((a, b) => a.path.localeCompare(b.path))
  }

  async close(): Promise<void> {
    this.closed = true
    this.files.clear()
  }
}
