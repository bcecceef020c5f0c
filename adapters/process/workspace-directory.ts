import fs from 'node:fs'
import path from 'node:path'
import { ExecgateError, type SandboxFileEntry } from '../../src/core'

const { O_CREAT, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_WRONLY } = fs.constants

/**
 * A persistent sandbox's workspace folder, read and written from the host (as root, for a sandbox that runs as a
 * uid of its own). Code in the sandbox can leave symbolic links in it pointing anywhere on the host, so nothing here
 * follows a link: every folder on a path is checked with lstat and every file is opened O_NOFOLLOW. No sandboxed
 * process runs while these run (the manager runs one call at a time per sandbox, and an exec's processes end with
 * it), so nothing can swap a folder for a link between the check and the open.
 */
export class WorkspaceDirectory {
  constructor(
    readonly root: string,
    /** Owner of what the host creates, so the sandbox's uid can change it; undefined when the sandbox runs as us. */
    private readonly owner: number | undefined,
    private readonly maxFileBytes: number,
  ) {}

  private refuse(relative: string, reason: string): ExecgateError {
    return new ExecgateError('EXECGATE_WORKSPACE_PATH', { path: relative, reason })
  }

  /** The host path of `relative`, after checking each folder on the way is a real folder (made when `create`). */
  private async resolve(relative: string, create: boolean): Promise<string | undefined> {
    const segments = relative.split('/')
    let current = this.root
    for (const segment of segments.slice(0, -1)) {
      current = path.join(current, segment)
      const stat = await fs.promises
        .lstat(current)
        .catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? undefined : Promise.reject(error)))
      if (!stat) {
        if (!create) return undefined
        await fs.promises.mkdir(current, { mode: 0o750 })
        if (this.owner !== undefined) await fs.promises.chown(current, this.owner, this.owner)
        continue
      }
      if (!stat.isDirectory())
        throw this.refuse(relative, stat.isSymbolicLink() ? `${segment} is a symbolic link` : `${segment} is not a folder`)
    }
    return path.join(current, segments[segments.length - 1]!)
  }

  async write(relative: string, content: Uint8Array): Promise<void> {
    if (content.byteLength > this.maxFileBytes)
      throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
        detail: `${relative} is ${content.byteLength} bytes; a file may hold ${this.maxFileBytes}`,
      })
    const target = (await this.resolve(relative, true))!
    let handle: fs.promises.FileHandle
    try {
      // Not O_TRUNC: the file is checked before anything of it changes.
      handle = await fs.promises.open(target, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o640)
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ELOOP') throw this.refuse(relative, 'it is a symbolic link')
      if (code === 'EISDIR') throw this.refuse(relative, 'it is a folder')
      throw error
    }
    try {
      const stat = await handle.stat()
      if (!stat.isFile()) throw this.refuse(relative, 'it is not a regular file')
      // A hard link the code made to a file it could see elsewhere (where the workspace shares its filesystem).
      if (stat.nlink > 1) throw this.refuse(relative, 'it is a hard link')
      if (this.owner !== undefined) await handle.chown(this.owner, this.owner)
      await handle.truncate(0)
      await handle.writeFile(content)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOSPC' || (error as NodeJS.ErrnoException).code === 'EFBIG') {
        throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
          detail: `${relative}: the sandbox's workspace is full (adapters.process.workspaceMb)`,
        })
      }
      throw error
    } finally {
      await handle.close()
    }
  }

  async read(relative: string): Promise<Uint8Array | undefined> {
    const target = await this.resolve(relative, false).catch(() => undefined)
    if (!target) return undefined
    // O_NONBLOCK: a FIFO the code left must not hang the host.
    const handle = await fs.promises.open(target, O_RDONLY | O_NOFOLLOW | O_NONBLOCK).catch(() => undefined)
    if (!handle) return undefined
    try {
      const stat = await handle.stat()
      if (!stat.isFile()) return undefined
      return await handle.readFile()
    } finally {
      await handle.close()
    }
  }

  async delete(relative: string): Promise<boolean> {
    const target = await this.resolve(relative, false).catch(() => undefined)
    if (!target) return false
    const stat = await fs.promises.lstat(target).catch(() => undefined)
    if (!stat || stat.isDirectory()) return false
    // A link is removed as itself, never what it points to.
    await fs.promises.unlink(target)
    return true
  }

  /** Regular files, walking real folders only (links are neither listed nor followed). */
  async list(): Promise<SandboxFileEntry[]> {
    const files: SandboxFileEntry[] = []
    const walk = async (folder: string, prefix: string): Promise<void> => {
      const entries = await fs.promises.readdir(folder, { withFileTypes: true }).catch(() => [])
      for (const entry of entries) {
        const full = path.join(folder, entry.name)
        const relative = prefix ? `${prefix}/${entry.name}` : entry.name
        if (entry.isDirectory()) await walk(full, relative)
        else if (entry.isFile()) {
          const stat = await fs.promises.lstat(full).catch(() => undefined)
          if (stat?.isFile()) files.push({ path: relative, size: stat.size })
        }
      }
    }
    await walk(this.root, '')
    return files.sort((a, b) => a.path.localeCompare(b.path))
  }
}
