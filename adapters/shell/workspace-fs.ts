import type { BashOptions, InMemoryFs } from 'just-bash'
import { toWorkspaceFile, workspaceFileBytes, type FilesystemAccess, type WorkspaceFile } from '../../src/core'

type ShellFileSystem = NonNullable<BashOptions['fs']>

/** Where the shell sees the workspace, as on the process and docker tiers. */
export const SHELL_WORKSPACE = '/workspace'

const MUTATING = new Set(['writeFile', 'appendFile', 'mkdir', 'rm', 'cp', 'mv', 'chmod', 'utimes'])
/** Links could make a path outside /workspace write through to a file inside it; without write access, none are made. */
const LINKING = new Set(['symlink', 'link'])

function inWorkspace(path: unknown): boolean {
  return typeof path === 'string' && (path === SHELL_WORKSPACE || path.startsWith(`${SHELL_WORKSPACE}/`))
}

function refusal(method: string, path: string, access: FilesystemAccess): Error {
  const why = access === 'none' ? 'the policy grants no filesystem access' : 'the policy grants read-only filesystem access'
  return Object.assign(new Error(`${method} ${path}: read-only file system (${why})`), { code: 'EROFS' })
}

/**
 * The shell's filesystem: everything is just-bash's in-memory tree (the host's files are never reachable), with
 * the workspace's files under /workspace. Outside /workspace (/tmp, /dev/null) the script has a scratch area that
 * ends with the run. Inside it, the policy's `filesystem` decides: `sandboxed` writes, `read_only` and `none`
 * (which also starts with no files) refuse every change.
 */
export function guardWorkspace(memory: InMemoryFs, access: FilesystemAccess): ShellFileSystem {
  if (access === 'sandboxed') return memory
  return new Proxy(memory, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof property !== 'string' || typeof value !== 'function') return value
      if (LINKING.has(property)) return async (...args: unknown[]) => Promise.reject(refusal(property, String(args[1]), access))
      if (!MUTATING.has(property)) return value.bind(target)
      return async (...args: unknown[]) => {
        const touched = args.slice(0, 2).find(inWorkspace)
        if (touched !== undefined) throw refusal(property, String(touched), access)
        return value.apply(target, args)
      }
    },
  }) as ShellFileSystem
}

/** Puts the run's files under /workspace. */
export async function placeFiles(memory: InMemoryFs, files: readonly WorkspaceFile[]): Promise<Map<string, Buffer>> {
  const placed = new Map<string, Buffer>()
  await memory.mkdir(SHELL_WORKSPACE, { recursive: true })
  for (const file of files) {
    const bytes = workspaceFileBytes(file)
    const full = `${SHELL_WORKSPACE}/${file.path}`
    await memory.mkdir(full.slice(0, full.lastIndexOf('/')), { recursive: true })
    await memory.writeFile(full, bytes)
    placed.set(file.path, bytes)
  }
  return placed
}

/** Regular files under /workspace that the run created or changed (links are not followed). */
export async function changedFiles(memory: InMemoryFs, placed: ReadonlyMap<string, Buffer>): Promise<WorkspaceFile[]> {
  const changed: WorkspaceFile[] = []
  for (const path of memory.getAllPaths()) {
    if (!path.startsWith(`${SHELL_WORKSPACE}/`)) continue
    const stat = await memory.lstat(path)
    if (!stat.isFile) continue
    const bytes = Buffer.from(await memory.readFileBuffer(path))
    const relative = path.slice(SHELL_WORKSPACE.length + 1)
    const before = placed.get(relative)
    if (!before || !before.equals(bytes)) changed.push(toWorkspaceFile(relative, bytes))
  }
  return changed
}
