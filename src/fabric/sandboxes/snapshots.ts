import { createHash } from 'node:crypto'
import { ExecgateError, type AdapterSandbox } from '../../core'
import {
  TarFormatError,
  UnsafeArchiveError,
  checkContainerArchive,
  isContainerArchive,
  normalizeWorkspacePath,
  readTar,
  workspaceFilesOf,
} from '../../workspace'
import { readArchive, writeArchive, type ArchiveFile } from './snapshot-archive'
import type { SandboxArtifactStore, SandboxSnapshot } from './sandbox-types'

/** The path a snapshot is recorded under in the ledger (its record names the sandbox as the source). */
export const SNAPSHOT_PATH = 'snapshot.tar'

const DIGEST = /^(?:sha256:)?([0-9a-fA-F]{64})$/

/**
 * Archives the sandbox and stores the archive, content-addressed, in the ledger's blob store through `artifacts.save`
 * (recorded with the sandbox as its source). A backend with `snapshotArchive` (docker) gives its whole changed
 * filesystem in one call; any other is read through the adapter contract (`listFiles`, `readFile`), its workspace's
 * regular files. The caller runs it in turn with the sandbox's other calls, so no exec changes anything meanwhile.
 * Past `maxBytes` it answers `EXECGATE_WORKSPACE_LIMIT` and stores nothing.
 */
export async function takeSnapshot(
  handle: AdapterSandbox,
  sandbox: { id: string; tenant: string; adapter: string },
  reason: SandboxSnapshot['reason'],
  artifacts: SandboxArtifactStore,
  maxBytes: number,
): Promise<SandboxSnapshot> {
  const { archive, files, skipped } = handle.snapshotArchive
    ? await containerArchive(handle, maxBytes)
    : await workspaceArchive(handle, maxBytes)
  const saved = await artifacts.save({
    tenant: sandbox.tenant,
    sandboxId: sandbox.id,
    adapter: sandbox.adapter,
    path: SNAPSHOT_PATH,
    content: archive,
    snapshot: true,
  })
  return {
    id: saved.sha256,
    sandboxId: sandbox.id,
    adapter: sandbox.adapter,
    files,
    bytes: archive.length,
    createdAt: new Date().toISOString(),
    reason,
    ...(skipped.length ? { skipped } : {}),
  }
}

async function containerArchive(handle: AdapterSandbox, maxBytes: number): Promise<{ archive: Buffer; files: number; skipped: string[] }> {
  const { archive, skipped } = await handle.snapshotArchive!(maxBytes)
  const bytes = Buffer.from(archive.buffer, archive.byteOffset, archive.byteLength)
  return {
    archive: bytes,
    files: readTar(bytes).entries.filter((entry) => entry.type === 'file' || entry.type === 'hardlink').length,
    skipped,
  }
}

async function workspaceArchive(handle: AdapterSandbox, maxBytes: number): Promise<{ archive: Buffer; files: number; skipped: string[] }> {
  const files: ArchiveFile[] = []
  let total = 0
  for (const entry of await handle.listFiles()) {
    const content = await handle.readFile(entry.path)
    // A file an exec removed between the listing and the read is simply not in the snapshot.
    if (!content) continue
    total += content.byteLength
    if (total > maxBytes) throw snapshotTooLarge(maxBytes)
    files.push({ path: entry.path, content })
  }
  return { archive: writeArchive(files), files: files.length, skipped: [] }
}

function snapshotTooLarge(maxBytes: number): ExecgateError {
  return new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
    detail: `a snapshot holds at most ${maxBytes} bytes (sandboxes.maxSnapshotBytes)`,
  })
}

/** What a start restores: a container archive (for a backend that takes one whole), and the workspace's files. */
export interface SnapshotContent {
  /** Set for a container snapshot (docker's): the archive, still to be checked by the backend that unpacks it. */
  containerArchive?: Buffer
  /** The workspace's regular files, for a backend without `restoreArchive`. */
  files: { path: string; content: Buffer }[]
}

/**
 * The tenant's snapshot: read from the ledger with the tenant's own check (another tenant's snapshot answers
 * `EXECGATE_NOT_FOUND` exactly like a missing one), its bytes verified against the digest that names them (a bucket
 * object changed behind the ledger's back is refused, never restored), then read as untrusted data: a container
 * archive is checked entry by entry (checkContainerArchive: no absolute path, no '..', nothing through a link) and a
 * workspace archive's paths are workspace paths; either is refused as a whole, before any backend opens.
 */
export async function readSnapshot(
  snapshotId: string,
  tenant: string,
  artifacts: SandboxArtifactStore | undefined,
  maxBytes: number,
): Promise<SnapshotContent> {
  const digest = DIGEST.exec(typeof snapshotId === 'string' ? snapshotId : '')?.[1]?.toLowerCase()
  if (!digest) throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'from must be a snapshot id (64 hexadecimal characters)' })
  if (!artifacts) throw new ExecgateError('EXECGATE_LEDGER_DISABLED')
  const archive = await artifacts.read(digest, tenant)
  const actual = createHash('sha256').update(archive).digest('hex')
  if (actual !== digest) throw new ExecgateError('EXECGATE_SNAPSHOT_CORRUPT', { id: digest, detail: `its bytes have SHA-256 ${actual}` })
  if (isContainerArchive(archive)) {
    let entries
    try {
      entries = checkContainerArchive(archive, maxBytes)
    } catch (error) {
      if (error instanceof TarFormatError && /more than/.test(error.message)) throw snapshotTooLarge(maxBytes)
      if (error instanceof TarFormatError || error instanceof UnsafeArchiveError)
        throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `not a sandbox snapshot: ${error.message}` })
      throw error
    }
    const files = workspaceFilesOf(entries).map((file) => ({ path: normalizeWorkspacePath(file.path), content: Buffer.from(file.content) }))
    return { containerArchive: archive, files }
  }
  const files = readArchive(archive).map((file) => ({ path: normalizeWorkspacePath(file.path), content: Buffer.from(file.content) }))
  if (files.reduce((sum, file) => sum + file.content.length, 0) > maxBytes) throw snapshotTooLarge(maxBytes)
  return { files }
}
