import { ExecgateError, workspaceFileBytes } from '../../core'
import type { SandboxArtifactStore, SandboxFile, SandboxUploads } from './sandbox-types'

/** A sandbox file named by digest rather than given by content. */
export function isArtifactFile(file: SandboxFile): file is Extract<SandboxFile, { sha256: string }> {
  return typeof file === 'object' && file !== null && 'sha256' in file && (file as { sha256?: unknown }).sha256 !== undefined
}

/** A file named by digest alone (no content): an upload or an artifact, which a backend may bind instead of copying. */
export function isUploadByDigest(file: SandboxFile): file is Extract<SandboxFile, { sha256: string }> {
  return isArtifactFile(file) && typeof file.sha256 === 'string' && (file as { content?: unknown }).content === undefined
}

/**
 * The bytes of a sandbox file: its content, or by digest the tenant's upload (`PUT /v1/files`), else the tenant's
 * artifact read from the ledger. A file with both, or a digest that is no upload while the ledger is off, is refused
 * in words naming what to change.
 */
export async function sandboxFileBytes(
  file: SandboxFile,
  tenant: string,
  artifacts: SandboxArtifactStore | undefined,
  uploads?: SandboxUploads,
): Promise<Buffer> {
  if (!isArtifactFile(file)) return workspaceFileBytes(file)
  if ('content' in file && (file as { content?: unknown }).content !== undefined)
    throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `${file.path}: give either content or sha256, not both` })
  if (typeof file.sha256 !== 'string')
    throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `${file.path}: sha256 must be a string` })
  const uploaded = await uploads?.read(file.sha256.replace(/^sha256:/, ''), tenant)
  if (uploaded) return uploaded
  // Without the ledger a digest can only be an upload: say that it is not one, rather than that the ledger is off.
  if (!artifacts && uploads) throw new ExecgateError('EXECGATE_FILE_NOT_FOUND', { sha256: file.sha256.slice(0, 80), tenant })
  if (!artifacts) throw new ExecgateError('EXECGATE_LEDGER_DISABLED')
  return artifacts.read(file.sha256, tenant)
}
