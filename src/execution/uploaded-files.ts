import { promises as fs } from 'node:fs'
import {
  ExecgateError,
  errorResult,
  inlineFiles,
  isFileReference,
  toWorkspaceFile,
  type CodeExecutionAdapter,
  type ExecutionRequest,
  type ExecutionResult,
  type FileMount,
} from '../core'
import { normalizeWorkspacePath } from '../workspace'

/** The upload store as the service sees it: where a tenant's upload is on this host (src/fabric/files). */
export interface UploadLocator {
  /** Undefined for a digest the tenant never uploaded, whoever else did: the two answer alike. */
  locate(tenant: string, sha256: string): Promise<{ hostPath: string; bytes: number } | undefined>
}

/** The tenant of a library caller that names none (as the ledger, the tasks and the sandboxes call it). */
export const LOCAL_TENANT = 'local'

/**
 * Step 1b: every `{ path, sha256 }` of the request found among the caller's own uploads, before anything runs; a
 * digest it does not hold (missing, or another tenant's) is the caller's `invalid_request`, the same words for both.
 */
export async function locateUploads(
  request: ExecutionRequest,
  tenant: string | undefined,
  uploads: UploadLocator | undefined,
): Promise<{ mounts: FileMount[]; refusal?: undefined } | { refusal: ExecutionResult }> {
  const mounts: FileMount[] = []
  for (const [index, file] of (request.files ?? []).entries()) {
    if (!isFileReference(file)) continue
    let path: string
    try {
      path = normalizeWorkspacePath(file.path)
    } catch (error) {
      const message = error instanceof Error ? error.message.replace(/^\[execgate\] /, '') : String(error)
      return { refusal: refused(new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `files[${index}].path: ${message}` })) }
    }
    const found = await uploads?.locate(tenant ?? LOCAL_TENANT, file.sha256)
    if (!found)
      return { refusal: refused(new ExecgateError('EXECGATE_FILE_NOT_FOUND', { sha256: file.sha256, tenant: tenant ?? LOCAL_TENANT })) }
    mounts.push({ path, sha256: file.sha256, bytes: found.bytes, hostPath: found.hostPath })
  }
  return { mounts }
}

function refused(error: ExecgateError): ExecutionResult {
  return errorResult('invalid_request', 'execgate', error)
}

/**
 * The request as one adapter gets it: uploads bound in read-only where the adapter can (`capabilities.fileMounts`:
 * process, docker), otherwise their bytes copied into the run's workspace like inline files (the workspace's size
 * limits apply).
 */
export async function placeUploads(
  adapter: CodeExecutionAdapter,
  request: ExecutionRequest,
  mounts: readonly FileMount[],
  maxFileBytes: number,
): Promise<{ request: ExecutionRequest; mounts?: readonly FileMount[] } | ExecutionResult> {
  if (mounts.length === 0) return { request }
  const inline = inlineFiles(request.files)
  if (adapter.capabilities.fileMounts) return { request: { ...request, files: inline }, mounts }
  const large = mounts.find((mount) => mount.bytes > maxFileBytes)
  if (large)
    return refused(
      new ExecgateError('EXECGATE_REQUEST_INVALID', {
        detail:
          `${large.path} (${large.bytes} bytes) is over the ${maxFileBytes}-byte workspace file ` +
          `limit of ${adapter.name}, which copies files in; the process and docker tiers bind ` +
          `uploads in whole`,
      }),
    )
  const copies = await Promise.all(mounts.map(async (mount) => toWorkspaceFile(mount.path, await fs.readFile(mount.hostPath))))
  return { request: { ...request, files: [...inline, ...copies] } }
}
