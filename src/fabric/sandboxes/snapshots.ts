import { createHash } from 'node:crypto'
import { ExecgateError, type AdapterSandbox } from '../../core'
import { normalizeWorkspacePath } from '../../workspace'
import { readArchive, writeArchive, type ArchiveFile } from './snapshot-archive'
import type { SandboxArtifactStore, SandboxSnapshot } from './sandbox-types'

/** The path a snapshot is recorded under in the ledger (its record names the sandbox as the source). */
export const SNAPSHOT_PATH = 'snapshot.tar'

const DIGEST = /^(?:sha256:)?([0-9a-fA-F]{64})$/

/**
 * Archives every regular file of the sandbox's workspace and stores the archive, content-addressed, in the ledger's
 * blob store through `artifacts.save` (recorded with the sandbox as its source). Read through the adapter contract
 * (`listFiles`, `readFile`), so any backend that hosts sandboxes can be snapshotted; the caller runs it in turn with
 * the sandbox's other calls, so no exec changes the workspace while it is read.
 */
export async function takeSnapshot(
  handle: AdapterSandbox,
  sandbox: { id: string; tenant: string; adapter: string },
  reason: SandboxSnapshot['reason'],
  artifacts: SandboxArtifactStore,
): Promise<SandboxSnapshot> {
  const files: ArchiveFile[] = []
  for (const entry of await handle.listFiles()) {
    const content = await handle.readFile(entry.path)
    // A file an exec removed between the listing and the read is simply not in the snapshot.
    if (content) files.push({ path: entry.path, content })
  }
  const archive = writeArchive(files)
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
    files: files.length,
    bytes: archive.length,
    createdAt: new Date().toISOString(),
    reason,
  }
}

/**
 * The files of the tenant's snapshot: read from the ledger with the tenant's own check (another tenant's snapshot
 * answers `EXECGATE_NOT_FOUND` exactly like a missing one), its bytes verified against the digest that names them
 * (a bucket object changed behind the ledger's back is refused, never restored), then unpacked.
 */
export async function snapshotFiles(
  snapshotId: string,
  tenant: string,
  artifacts: SandboxArtifactStore | undefined,
): Promise<{ path: string; content: Buffer }[]> {
  const digest = DIGEST.exec(typeof snapshotId === 'string' ? snapshotId : '')?.[1]?.toLowerCase()
  if (!digest) throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'from must be a snapshot id (64 hexadecimal characters)' })
  if (!artifacts) throw new ExecgateError('EXECGATE_LEDGER_DISABLED')
  const archive = await artifacts.read(digest, tenant)
  const actual = createHash('sha256').update(archive).digest('hex')
  if (actual !== digest) throw new ExecgateError('EXECGATE_SNAPSHOT_CORRUPT', { id: digest, detail: `its bytes have SHA-256 ${actual}` })
  return readArchive(archive).map((file) => ({ path: normalizeWorkspacePath(file.path), content: Buffer.from(file.content) }))
}
