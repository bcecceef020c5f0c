import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { ExecgateError } from '../../src/core'
import { currentOwner, formatOwner, ownerMayBeAlive, parseOwner } from '../shared/sandbox-owner'
import { abandonedClaims, claimAbandoned, releaseUidClaim, tryClaimUid } from './uid-claims'
import { sweep as killProcessesOf } from './uid-pool'

const run = promisify(execFile)

/**
 * Where persistent process sandboxes live on the host. Each has a folder under the root (`persistentDir`) holding an
 * `owner` file (the execgate process that made it) and `workspace/`. As root, a sandbox also claims a uid of its own
 * for its life: a claim is a file created exclusively in one folder for the whole host (`<tmpdir>/execgate-sandbox-uids`),
 * whatever root each execgate uses, so two processes never share a uid. Its workspace is then a tmpfs of
 * `workspaceMb` mounted for the sandbox's life, so the workspace's total size is capped as a one-shot run's is;
 * without root it is a plain folder.
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

/** True when the owner recorded in `file` (first line) is gone; a missing file counts once older than the grace. */
function abandoned(file: string, madeAt: string): boolean {
  try {
    const owner = parseOwner(fs.readFileSync(file, 'utf8').split('\n')[0] ?? '')
    return !owner || !ownerMayBeAlive(owner)
  } catch {
    try {
      return Date.now() - fs.statSync(madeAt).mtimeMs > CLAIM_GRACE_MS
    } catch {
      return false
    }
  }
}

/** Claims the first free uid of the range for this process; a claim a dead process left is cleaned up and taken. */
async function claimUid(range: { first: number; last: number }): Promise<number> {
  for (let uid = range.first; uid <= range.last; uid++) {
    if (tryClaimUid(uid)) return uid
    if (claimAbandoned(uid)) {
      await releaseUid(uid)
      if (tryClaimUid(uid)) return uid
    }
  }
  throw new ExecgateError('EXECGATE_ADAPTER_UNAVAILABLE', {
    name: 'process',
    detail: `every uid of adapters.process.persistentUids (${range.first}-${range.last}) holds a live sandbox`,
  })
}

/** Ends every process of the uid, then frees its claim. */
async function releaseUid(uid: number): Promise<void> {
  await killProcessesOf(uid)
  releaseUidClaim(uid)
}

/** Makes a sandbox's folder (and, as root, claims its uid and mounts its workspace). */
export async function claimDirectory(
  root: string,
  id: string,
  options: { uids?: { first: number; last: number }; workspaceMb: number },
): Promise<SandboxDirectory> {
  fs.mkdirSync(root, { recursive: true, mode: 0o711 })
  // Traversable by the sandboxes' uids (each folder below is their own), listable by nobody else.
  fs.chmodSync(root, 0o711)
  const uid = options.uids ? await claimUid(options.uids) : undefined
  const folder = path.join(root, id)
  try {
    fs.mkdirSync(folder, { mode: uid === undefined ? 0o700 : 0o711 })
    fs.writeFileSync(path.join(folder, OWNER_FILE), `${formatOwner(currentOwner())}\n${id}\n${uid ?? ''}\n`, { mode: 0o600 })
    const workspace = path.join(folder, 'workspace')
    fs.mkdirSync(workspace, { mode: 0o700 })
    let mounted = false
    if (uid !== undefined) {
      try {
        await run(
          'mount',
          ['-t', 'tmpfs', '-o', `size=${options.workspaceMb}m,mode=0700,uid=${uid},gid=${uid},nosuid,nodev`, 'tmpfs', workspace],
          { timeout: 10_000 },
        )
        mounted = true
      } catch {
        // No mount here (a container without the capability): a plain folder the sandbox's uid owns.
        fs.chownSync(workspace, uid, uid)
      }
    }
    return { folder, workspace, uid, mounted }
  } catch (error) {
    await releaseDirectory({ folder, uid })
    throw error
  }
}

/** Whether something is mounted exactly at `target` (read from the kernel, so a crashed run's mount is found too). */
function isMountPoint(target: string): boolean {
  try {
    const escaped = target.replace(/[ \t\n\\]/g, (char) => `\\${char.charCodeAt(0).toString(8).padStart(3, '0')}`)
    return fs
      .readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .some((line) => line.split(' ')[4] === escaped)
  } catch {
    return false
  }
}

/** Ends the sandbox's processes, unmounts its workspace, deletes its folder and frees its uid. */
export async function releaseDirectory(directory: Pick<SandboxDirectory, 'folder' | 'uid'>): Promise<void> {
  if (directory.uid !== undefined) await killProcessesOf(directory.uid)
  const workspace = path.join(directory.folder, 'workspace')
  if (isMountPoint(workspace)) {
    await run('umount', [workspace], { timeout: 10_000 }).catch(() =>
      run('umount', ['-l', workspace], { timeout: 10_000 }).catch(() => undefined),
    )
  }
  // Not following links: whatever the sandbox left in its workspace is removed as itself.
  await fs.promises.rm(directory.folder, { recursive: true, force: true })
  if (directory.uid !== undefined) await releaseUid(directory.uid)
}

/** Releases every folder under the root, and every uid claim, whose owner process is gone; resolves to how many. */
export async function sweepDirectories(root: string): Promise<number> {
  let released = 0
  for (const entry of safeReaddir(root)) {
    const folder = path.join(root, entry)
    if (!abandoned(path.join(folder, OWNER_FILE), folder)) continue
    const uid = Number(safeRead(path.join(folder, OWNER_FILE)).split('\n')[2]) || undefined
    await releaseDirectory({ folder, uid }).then(
      () => released++,
      () => undefined,
    )
  }
  for (const uid of abandonedClaims()) await releaseUid(uid).catch(() => undefined)
  return released
}

function safeReaddir(folder: string): string[] {
  try {
    return fs.readdirSync(folder)
  } catch {
    return []
  }
}

function safeRead(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch {
    return ''
  }
}
