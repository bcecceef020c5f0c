import { ExecgateError } from '../../core/errors'
import { canonicalJson, sha256 } from './digest'
import { DEFAULT_TENANT, type LedgerItem } from './ledger-writer'
import { JSON_MEDIA_TYPE, mediaTypeOf } from './media-types'
import type { ArtifactRef, PlanVersionInput, PlanVersionRecord, SandboxFileInput, SandboxFileRecord } from './types'

/**
 * What a plan version or a sandbox file becomes on the ledger's queue: the caller's input checked, its bytes hashed
 * and its entry made at once (the caller may name the digest as soon as it is answered).
 */

export function planVersionItem(input: PlanVersionInput, execgateVersion: string): Extract<LedgerItem, { kind: 'plan' }> {
  if (typeof input?.planId !== 'string' || !input.planId || !Number.isInteger(input.version) || input.version < 1) {
    throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'a plan version needs a planId and a version of 1 or more' })
  }
  const tenant = input.tenant ?? DEFAULT_TENANT
  const bytes = Buffer.from(canonicalJson(input.document ?? null))
  const document: ArtifactRef = {
    path: `plan-${input.planId}-v${input.version}.json`,
    sha256: sha256(bytes),
    size: bytes.length,
    mediaType: JSON_MEDIA_TYPE,
  }
  const entry: Omit<PlanVersionRecord, 'previousDocument'> = {
    kind: 'plan_version',
    tenant,
    planId: input.planId,
    version: input.version,
    ...(input.previousVersion !== undefined ? { previousVersion: input.previousVersion } : {}),
    document,
    ...(input.reason ? { reason: input.reason } : {}),
    execgateVersion,
    recordedAt: new Date().toISOString(),
  }
  return { kind: 'plan', tenant, entry, bytes }
}

export function sandboxFileItem(input: SandboxFileInput, execgateVersion: string): Extract<LedgerItem, { kind: 'sandbox_file' }> {
  if (
    typeof input?.sandboxId !== 'string' ||
    !input.sandboxId ||
    typeof input.path !== 'string' ||
    !input.path ||
    !Buffer.isBuffer(input.content)
  ) {
    throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'a sandbox file needs a sandboxId, a path and its content' })
  }
  const file: ArtifactRef = {
    path: input.path,
    sha256: sha256(input.content),
    size: input.content.length,
    mediaType: mediaTypeOf(input.path),
  }
  const entry: SandboxFileRecord = {
    kind: 'sandbox_file',
    tenant: input.tenant ?? DEFAULT_TENANT,
    sandboxId: input.sandboxId,
    adapter: input.adapter,
    file,
    ...(input.snapshot ? { snapshot: true as const } : {}),
    execgateVersion,
    recordedAt: new Date().toISOString(),
  }
  return { kind: 'sandbox_file', entry, bytes: input.content }
}
