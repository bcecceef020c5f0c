import { promises as fs, constants as fsConstants } from 'node:fs'
import path from 'node:path'
import { ExecgateError } from '../core/errors'
import type { WorkspaceEntry, WorkspaceLayer } from './types'

const MAX_LISTED_FILES = 10_000

/**
 * A host directory as a read-only layer. Every read resolves symlinks and refuses a target outside the root, and
 * opens with O_NOFOLLOW on the final component, so a link swapped in after the check cannot lead out either.
 */
export class DirectoryLayer implements WorkspaceLayer {
  private rootReal?: string

  constructor(
    private readonly root: string,
    private readonly maxFileBytes: number,
  ) {}

  private async realRoot(): Promise<string> {
    this.rootReal ??= await fs.realpath(this.root)
    return this.rootReal
  }

  /** The real path of a workspace path inside the root, or undefined when there is none. */
  private async resolve(relative: string): Promise<string | undefined> {
    const root = await this.realRoot()
    let real: string
    try {
      real = await fs.realpath(path.join(root, relative))
    } catch {
      return undefined
    }
    if (real !== root && !real.startsWith(root + path.sep)) {
      throw new ExecgateError('EXECGATE_WORKSPACE_PATH', { path: relative, reason: 'it is a link that leads outside the workspace' })
    }
    return real
  }

  async read(relative: string): Promise<Buffer | undefined> {
    const real = await this.resolve(relative)
    if (!real) return undefined
    let handle: fs.FileHandle
    try {
      handle = await fs.open(real, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK)
    } catch {
      return undefined
    }
    try {
      const stat = await handle.stat()
      if (!stat.isFile()) return undefined
      if (stat.size > this.maxFileBytes) {
        throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
          detail: `${relative} is ${stat.size} bytes; files are limited to ${this.maxFileBytes} bytes`,
        })
      }
      return await handle.readFile()
    } finally {
      await handle.close()
    }
  }

  async list(): Promise<WorkspaceEntry[]> {
    const root = await this.realRoot()
    const entries: WorkspaceEntry[] = []
    const walk = async (directory: string, prefix: string): Promise<void> => {
      for (const item of await fs.readdir(directory, { withFileTypes: true })) {
        if (entries.length >= MAX_LISTED_FILES) return
        const relative = prefix ? `${prefix}/${item.name}` : item.name
        // Links are not followed when listing: a link inside the root that leads out is simply not shown.
        if (item.isDirectory()) await walk(path.join(directory, item.name), relative)
        else if (item.isFile()) entries.push({ path: relative, size: (await fs.stat(path.join(directory, item.name))).size })
        else if (item.isSymbolicLink()) {
          const real = await this.resolve(relative).catch(() => undefined)
          const stat = real ? await fs.stat(real).catch(() => undefined) : undefined
          if (stat?.isFile()) entries.push({ path: relative, size: stat.size })
        }
      }
    }
    await walk(root, '')
    return entries
  }
}
