import type { ExecutionRequest, SecurityPolicy } from '../../src/core'

/** One request that asks for more than the caller's policy allows, and the limit the refusal must name. */
export interface Loosening {
  label: string
  request: Pick<ExecutionRequest, 'timeoutMs' | 'memoryMb' | 'policy'>
  limit: string
}

/**
 * Every way a request can loosen `base`: each numeric limit one above it (the shorthands `timeoutMs` and `memoryMb`
 * as well as the policy's own fields), the host-call budget's two parts, a network host, a wider filesystem and an
 * import. The resolve-policy test, the adapter contract and the HTTP tests all walk this one table, so a limit
 * added to SecurityPolicy is refused everywhere or fails the test that lists them (`LOOSENABLE_FIELDS`).
 */
export function loosenings(base: SecurityPolicy): Loosening[] {
  const wider = { none: 'read_only', read_only: 'sandboxed', sandboxed: undefined } as const
  const filesystem = wider[base.filesystem]
  return [
    { label: 'timeoutMs', request: { timeoutMs: base.wallTimeMs + 1 }, limit: 'wallTimeMs' },
    { label: 'policy.wallTimeMs', request: { policy: { wallTimeMs: base.wallTimeMs + 1 } }, limit: 'wallTimeMs' },
    { label: 'memoryMb', request: { memoryMb: base.memoryMb + 1 }, limit: 'memoryMb' },
    { label: 'policy.memoryMb', request: { policy: { memoryMb: base.memoryMb + 1 } }, limit: 'memoryMb' },
    { label: 'policy.cpuTimeMs', request: { policy: { cpuTimeMs: base.cpuTimeMs + 1 } }, limit: 'cpuTimeMs' },
    { label: 'policy.outputBytes', request: { policy: { outputBytes: base.outputBytes + 1 } }, limit: 'outputBytes' },
    { label: 'policy.maxProcesses', request: { policy: { maxProcesses: base.maxProcesses + 1 } }, limit: 'maxProcesses' },
    { label: 'policy.maxOutputs', request: { policy: { maxOutputs: base.maxOutputs + 1 } }, limit: 'maxOutputs' },
    { label: 'policy.outputsBytes', request: { policy: { outputsBytes: base.outputsBytes + 1 } }, limit: 'outputsBytes' },
    {
      label: 'policy.hostCalls.maxCount',
      request: { policy: { hostCalls: { maxCount: base.hostCalls.maxCount + 1 } } },
      limit: 'hostCalls.maxCount',
    },
    {
      label: 'policy.hostCalls.maxTotalMs',
      request: { policy: { hostCalls: { maxTotalMs: base.hostCalls.maxTotalMs + 1 } } },
      limit: 'hostCalls.maxTotalMs',
    },
    { label: 'policy.network', request: { policy: { network: ['example.com'] } }, limit: 'network' },
    ...(filesystem ? [{ label: 'policy.filesystem', request: { policy: { filesystem } }, limit: 'filesystem' }] : []),
    { label: 'policy.allowedImports', request: { policy: { allowedImports: [...base.allowedImports, 'os'] } }, limit: 'allowedImports' },
  ]
}

/** The SecurityPolicy fields a request can loosen (every field but `required`, which only ever adds enforcement). */
export const LOOSENABLE_FIELDS: ReadonlyArray<keyof SecurityPolicy> = [
  'wallTimeMs',
  'cpuTimeMs',
  'memoryMb',
  'outputBytes',
  'maxOutputs',
  'outputsBytes',
  'network',
  'filesystem',
  'allowedImports',
  'hostCalls',
  'maxProcesses',
]
