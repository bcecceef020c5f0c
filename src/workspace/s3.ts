import { ExecgateError } from '../core/errors'
import { S3Objects, type S3Settings } from './s3-objects'
import { DEFAULT_WORKSPACE_LIMITS, type Workspace, type WorkspaceEntry, type WorkspaceLayer, type WorkspaceLimits } from './types'

/**
 * Workspaces backed by an S3-compatible bucket (the tier design's fsx backends): each workspace is a key prefix, so a
 * session's or a plan's files outlive the process and are the same on every node that opens the prefix. Paths reach
 * these classes normalised (`normalizeWorkspacePath`), so a key can never climb out of its prefix. The SDK is loaded
 * only when one is created.
 */

/** A bucket prefix as a read-only layer (under an `OverlayWorkspace`, like a `DirectoryLayer`). */
export class S3Layer implements WorkspaceLayer {
  readonly objects: S3Objects

  constructor(
    where: S3Objects | S3Settings,
    private readonly maxFileBytes = DEFAULT_WORKSPACE_LIMITS.maxFileBytes,
  ) {
    this.objects = where instanceof S3Objects ? where : new S3Objects(where)
  }

  async read(path: string): Promise<Buffer | undefined> {
    const found = await this.objects.get(path)
    if (found && found.body.length > this.maxFileBytes) {
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `${path} is ${found.body.length} bytes; files are limited to ${this.maxFileBytes} bytes`,
      })
    }
    return found?.body
  }

  async list(): Promise<WorkspaceEntry[]> {
    return (await this.objects.list()).map((entry) => ({ path: entry.key, size: entry.size })).sort((a, b) => a.path.localeCompare(b.path))
  }
}

/**
 * A readable and writable workspace in a bucket prefix, with the same limits as a `MemoryWorkspace` (counted over
 * everything under the prefix, including what earlier processes wrote). Writes go straight to the bucket.
 */
export class S3Workspace implements Workspace {
  readonly objects: S3Objects
  readonly limits: WorkspaceLimits
  private readonly written = new Map<string, Buffer>()
  private sizes: Promise<Map<string, number>> | undefined

  constructor(where: S3Objects | S3Settings, limits: Partial<WorkspaceLimits> = {}) {
    this.objects = where instanceof S3Objects ? where : new S3Objects(where)
    this.limits = { ...DEFAULT_WORKSPACE_LIMITS, ...limits }
  }

  /** What the prefix holds, listed once and then kept up to date by this workspace's own writes. */
  private held(): Promise<Map<string, number>> {
    this.sizes ??= this.objects.list().then((entries) => new Map(entries.map((entry) => [entry.key, entry.size])))
    return this.sizes
  }

  async read(path: string): Promise<Buffer | undefined> {
    const written = this.written.get(path)
    if (written) return written
    const found = await this.objects.get(path)
    if (found && found.body.length > this.limits.maxFileBytes) {
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `${path} is ${found.body.length} bytes; files are limited to ${this.limits.maxFileBytes} bytes`,
      })
    }
    return found?.body
  }

  async list(): Promise<WorkspaceEntry[]> {
    return [...(await this.held())].map(([path, size]) => ({ path, size })).sort((a, b) => a.path.localeCompare(b.path))
  }

  async write(path: string, content: Buffer): Promise<void> {
    const { maxFileBytes, maxTotalBytes, maxFiles } = this.limits
    if (content.length > maxFileBytes) {
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `${path} is ${content.length} bytes; files are limited to ${maxFileBytes} bytes`,
      })
    }
    const sizes = await this.held()
    const previous = sizes.get(path)
    let total = content.length - (previous ?? 0)
    for (const size of sizes.values()) total += size
    if (total > maxTotalBytes) {
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `writing ${path} would bring the workspace to ${total} bytes; the limit is ${maxTotalBytes}`,
      })
    }
    if (previous === undefined && sizes.size >= maxFiles) {
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', { detail: `the workspace already holds its limit of ${maxFiles} files` })
    }
    for (const existing of sizes.keys()) {
      if (existing.startsWith(`${path}/`))
        throw new ExecgateError('EXECGATE_WORKSPACE_PATH', { path, reason: 'a directory of that name exists' })
      if (path.startsWith(`${existing}/`))
        throw new ExecgateError('EXECGATE_WORKSPACE_PATH', { path, reason: `${existing} is a file, not a directory` })
    }
    // Counted before the upload, so two writes at once cannot both pass the limit.
    sizes.set(path, content.length)
    try {
      await this.objects.put(path, Buffer.from(content))
    } catch (error) {
      if (previous === undefined) sizes.delete(path)
      else sizes.set(path, previous)
      throw error
    }
    this.written.set(path, Buffer.from(content))
  }

  changes(): { path: string; content: Buffer }[] {
    return [...this.written].map(([path, content]) => ({ path, content }))
  }

  /** Removes every file under the prefix (a closed session's, a finished plan's). */
  async clear(): Promise<void> {
    const keys = (await this.objects.list()).map((entry) => entry.key)
    if (keys.length) await this.objects.delete(keys)
    this.written.clear()
    this.sizes = Promise.resolve(new Map())
  }
}
