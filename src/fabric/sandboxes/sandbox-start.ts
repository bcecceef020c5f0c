import {
  ExecgateError,
  describeError,
  isExecgateError,
  type AdapterRegistry,
  type CodeExecutionAdapter,
  type SecurityPolicy,
} from '../../core'
import { resolvePolicy } from '../../policy'
import { unenforcedRequirement } from '../../routing/config-router'
import { normalizeWorkspacePath } from '../../workspace'
import { isUploadByDigest, sandboxFileBytes } from './artifact-files'
import type { SandboxArtifactStore, SandboxFile, SandboxSettings, SandboxStartOptions, SandboxUploads } from './sandbox-types'

// What a sandbox's start decides before any backend opens: its adapter, policy, idle timeout and files.

/** Adapters that can host sandboxes, cheapest tier first (`routing.tierOrder`). */
export function sandboxCapableAdapters(registry: AdapterRegistry, tierOrder?: readonly number[]): CodeExecutionAdapter[] {
  const order = tierOrder ?? [1, 3, 4, 2, 0]
  const rank = (adapter: CodeExecutionAdapter) => {
    const at = order.indexOf(adapter.capabilities.tier)
    return at === -1 ? order.length : at
  }
  return registry
    .list()
    .filter((adapter) => adapter.capabilities.sandboxes && adapter.openSandbox)
    .sort((a, b) => rank(a) - rank(b))
}

/** The adapter `name` (the caller's, else `sandboxes.adapter`) names; `auto` is the cheapest capable one. */
export function chooseSandboxAdapter(
  registry: AdapterRegistry,
  tierOrder: readonly number[] | undefined,
  name: string,
): CodeExecutionAdapter {
  const capable = sandboxCapableAdapters(registry, tierOrder)
  const known = capable.map((adapter) => adapter.name).join(', ') || 'none'
  if (name === 'auto') {
    if (!capable[0])
      throw new ExecgateError('EXECGATE_SANDBOX_UNSUPPORTED', {
        name: 'auto',
        detail: 'no enabled adapter hosts sandboxes (execution.enabled)',
        known,
      })
    return capable[0]
  }
  const adapter = registry.get(name)
  if (!adapter) {
    if (!registry.knownNames().includes(name))
      throw new ExecgateError('EXECGATE_ADAPTER_UNKNOWN', { name, known: registry.knownNames().join(', ') })
    throw new ExecgateError('EXECGATE_SANDBOX_UNSUPPORTED', { name, detail: 'it is not enabled (execution.enabled)', known })
  }
  if (!adapter.capabilities.sandboxes || !adapter.openSandbox)
    throw new ExecgateError('EXECGATE_SANDBOX_UNSUPPORTED', { name, detail: 'it has no sandboxes capability', known })
  return adapter
}

/** The sandbox's policy: `base` (the caller's profile with `sandboxes.filesystem`), tightened by the options. */
export function sandboxPolicy(base: SecurityPolicy, options: SandboxStartOptions, adapter: CodeExecutionAdapter): SecurityPolicy {
  const resolution = resolvePolicy(base, options)
  if (!resolution.policy)
    throw new ExecgateError('EXECGATE_POLICY_LOOSENED', {
      detail: resolution.loosening.message.replace(/^the request may only tighten the policy: /, ''),
    })
  const limit = unenforcedRequirement(adapter, resolution.policy)
  if (limit) throw new ExecgateError('EXECGATE_POLICY_UNENFORCEABLE', { limit, detail: `${adapter.name} does not enforce it` })
  return resolution.policy
}

export function sandboxIdleTimeout(
  settings: Pick<SandboxSettings, 'idleTimeoutMs' | 'maxIdleTimeoutMs'>,
  asked: number | undefined,
): number {
  const { idleTimeoutMs, maxIdleTimeoutMs } = settings
  if (asked === undefined) return Math.min(idleTimeoutMs, maxIdleTimeoutMs)
  if (!Number.isInteger(asked) || asked < 1 || asked > maxIdleTimeoutMs) {
    throw new ExecgateError('EXECGATE_REQUEST_INVALID', {
      detail: `idleTimeoutMs must be a whole number of ms from 1 to ${maxIdleTimeoutMs} (sandboxes.maxIdleTimeoutMs)`,
    })
  }
  return asked
}

/** The start's files, each path checked and its content read (an upload by digest only found: bound in later, not read). */
export async function startFiles(
  requested: readonly SandboxFile[],
  tenant: string,
  artifacts: SandboxArtifactStore | undefined,
  uploads: SandboxUploads | undefined,
): Promise<{ path: string; content: Buffer | { sha256: string } }[]> {
  const files: { path: string; content: Buffer | { sha256: string } }[] = []
  const locate = uploads?.locate
  for (const [index, file] of requested.entries()) {
    try {
      const path = normalizeWorkspacePath(file.path)
      // An upload is only found now (nothing read): the sandbox binds it in where its backend can, else copies it.
      const upload = isUploadByDigest(file) && locate ? await locate(file.sha256.replace(/^sha256:/, ''), tenant) : undefined
      files.push({
        path,
        content: upload ? { sha256: (file as { sha256: string }).sha256 } : await sandboxFileBytes(file, tenant, artifacts, uploads),
      })
    } catch (error) {
      if (
        (['EXECGATE_NOT_FOUND', 'EXECGATE_FILE_NOT_FOUND', 'EXECGATE_LEDGER_DISABLED'] as const).some((code) =>
          isExecgateError(error, code),
        )
      )
        throw error
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', {
        detail: `files[${index}]: ${describeError(error).replace(/^\[execgate\] /, '')}`,
      })
    }
  }
  return files
}
