import { ExecgateError } from '../core/errors'
import { DEFAULT_WORKSPACE_LIMITS, type Workspace, type WorkspaceEntry, type WorkspaceLimits } from './types'

/** A workspace held in memory, with its size limits enforced on every write. */
export class MemoryWorkspace implements Workspace {
  private readonly files = new Map<string, Buffer>()
  private totalBytes = 0
  readonly limits: WorkspaceLimits

  constructor(limits: Partial<WorkspaceLimits> = {}) {
    this.limits = { ...DEFAULT_WORKSPACE_LIMITS, ...limits }
  }

  async read(path: string): Promise<Buffer | undefined> {
    return this.files.get(path)
  }

  async list(): Promise<WorkspaceEntry[]> {
    return [...this.files].map(([path, content]) => ({ path, size: content.length }))
  }

  async write(path: string, content: Buffer): Promise<void> {
    const { maxFileBytes, maxTotalBytes, maxFiles } = this.limits
    if (content.length > maxFileBytes) {
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `${path} is ${content.length} bytes; files are limited to ${maxFileBytes} bytes`,
      })
    }
    const previous = this.files.get(path)
    const total = this.totalBytes - (previous?.length ?? 0) + content.length
    if (total > maxTotalBytes) {
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `writing ${path} would bring the workspace to ${total} bytes; the limit is ${maxTotalBytes}`,
      })
    }
    if (!previous && this.files.size >= maxFiles) {
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', { detail: `the workspace already holds its limit of ${maxFiles} files` })
    }
    // A parent that is a file, or a file under an existing directory's name, would make listings ambiguous.
    for (const existing of this.files.keys()) {
      if (existing.startsWith(`${path}/`))
        throw new ExecgateError('EXECGATE_WORKSPACE_PATH', { path, reason: 'a directory of that name exists' })
      if (path.startsWith(`${existing}/`))
        throw new ExecgateError('EXECGATE_WORKSPACE_PATH', { path, reason: `${existing} is a file, not a directory` })
    }
    this.files.set(path, Buffer.from(content))
    this.totalBytes = total
  }

  changes(): { path: string; content: Buffer }[] {
    return [...this.files].map(([path, content]) => ({ path, content }))
  }

  get size(): number {
    return this.totalBytes
  }
}
