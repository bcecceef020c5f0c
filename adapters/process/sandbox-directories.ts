import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { ExecgateError } from '../../src/core'
import { currentOwner, formatOwner, ownerMayBeAlive, parseOwner } from '../shared/sandbox-owner'
import { sweep as killProcessesOf } from './uid-pool'

const run = promisify(execFile)

/**
 * Where persistent process sandboxes live on the host: one folder each under the root, holding an `owner` file (the
 * execgate process that made it) and `workspace/`. As root, a sandbox's folder is named after the uid it claims
 * (`uid-61100`): mkdir is atomic, so two execgate processes on one host never share a uid. Its workspace is then a
 * tmpfs of `workspaceMb` mounted for the sandbox's life, so the workspace's total size is capped as a one-shot run's
 * is; without root it is a plain folder.
 */

export interface SandboxDirectory {
  /** The sandbox's folder (its owner file and workspace). */
  folder: string
  workspace: string
  /** The host uid the sandbox runs as (root only). */
  uid?: number
  /** True when the workspace is a tmpfs of its own. */
  mounted: boolean
}

const OWNER_FILE = 'owner'
/** A folder younger than this without an owner file is being made by another process, not left by a crash. */
const CLAIM_GRACE_MS = 60_000

export function sandboxRoot(configured: string): string {
  return configured || path.join(os.tmpdir(), 'execgate-sandboxes')
}

function ensureRoot(root: string): void {
  fs.mkdirSync(root, { recursive: true, mode: 0o711 })
  // Traversable by the sandboxes' uids (each folder below is their own), listable by nobody else.
  fs.chmodSync(root, 0o711)
}

/** True when the folder's owner process is gone (or it has no owner file and is older than the claim grace). */
function abandoned(folder: string): boolean {
  try {
    const owner = parseOwner(fs.readFileSync(path.join(folder, OWNER_FILE), 'utf8').split('\n')[0] ?? '')
    return !owner || !ownerMayBeAlive(owner)
  } catch {
    try {
      return Date.now() - fs.statSync(folder).mtimeMs > CLAIM_GRACE_MS
    } catch {
      return false
    }
  }
}

/** Claims a folder (and, as root, a uid) for a new sandbox and prepares its workspace. */
export async function claimDirectory(root: string, id: string, options: { uids?: { first: number; last: number }; workspaceMb: number }): Promise<SandboxDirectory> {
  ensureRoot(root)
  let folder: string | undefined
  let uid: number | undefined
  if (options.uids) {
    for (let candidate = options.uids.first; candidate <= options.uids.last && !folder; candidate++) {
      const name = path.join(root, `uid-${candidate}`)
      try {
        fs.mkdirSync(name, { mode: 0o711 })
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !abandoned(name)) continue
        // Left by a crashed execgate: cleaned up here and claimed again (unless another process got there first).
        await releaseDirectory(name)
        try {
          fs.mkdirSync(name, { mode: 0o711 })
        } catch {
          continue
        }
      }
      folder = name
      uid = candidate
    }
    if (!folder) throw new ExecgateError('EXECGATE_ADAPTER_UNAVAILABLE', { name: 'process', detail: `every uid of adapters.process.persistentUids (${options.uids.first}-${options.uids.last}) holds a live sandbox` })
  } else {
    folder = path.join(root, id)
    fs.mkdirSync(folder, { mode: 0o700 })
  }
  fs.writeFileSync(path.join(folder, OWNER_FILE), `${formatOwner(currentOwner())}\n${id}\n`, { mode: 0o600 })
  const workspace = path.join(folder, 'workspace')
  fs.mkdirSync(workspace, { mode: 0o700 })
  let mounted = false
  if (uid !== undefined) {
    try {
      await run('mount', ['-t', 'tmpfs', '-o', `size=${options.workspaceMb}m,mode=0700,uid=${uid},gid=${uid},nosuid,nodev`, 'tmpfs', workspace], { timeout: 10_000 })
      mounted = true
    } catch {
      // No mount here (a container without the capability): a plain folder the sandbox's uid owns.
      fs.chownSync(workspace, uid, uid)
    }
  }
  return { folder, workspace, uid, mounted }
}

/** Whether something is mounted exactly at `target` (read from the kernel, so a crashed run's mount is found too). */
function isMountPoint(target: string): boolean {
  try {
    const escaped = target.replace(/[ \t\n\\]/g, (char) => `\\${char.charCodeAt(0).toString(8).padStart(3, '0')}`)
    return fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n').some((line) => line.split(' ')[4] === escaped)
  } catch {
    return false
  }
}

/** Ends the sandbox's processes, unmounts its workspace and deletes its folder; the uid is free again after. */
export async function releaseDirectory(folder: string): Promise<void> {
  const uid = /^uid-(\d+)$/.exec(path.basename(folder))?.[1]
  if (uid !== undefined) await killProcessesOf(Number(uid))
  const workspace = path.join(folder, 'workspace')
  if (isMountPoint(workspace)) {
    await run('umount', [workspace], { timeout: 10_000 }).catch(() => run('umount', ['-l', workspace], { timeout: 10_000 }).catch(() => undefined))
  }
  await fs.promises.rm(folder, { recursive: true, force: true })
}

/** Releases every folder under the root whose owner process is gone; resolves to how many. */
export async function sweepDirectories(root: string): Promise<number> {
  let entries: string[]
  try {
    entries = fs.readdirSync(root)
  } catch {
    return 0
  }
  let released = 0
  for (const entry of entries) {
    const folder = path.join(root, entry)
    if (!abandoned(folder)) continue
    await releaseDirectory(folder).then(() => released++, () => undefined)
  }
  return released
}
