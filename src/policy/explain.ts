import {
  POLICY_LIMITS,
  type CodeExecutionAdapter,
  type Enforcement,
  type PolicyLimit,
  type SecurityPolicy,
  type SyscallFilterSummary,
} from '../core'

export interface PolicyExplanationRow {
  limit: PolicyLimit
  /** The policy's setting for this limit, in words. */
  setting: string
  enforcement: Enforcement
  required: boolean
  /** False when the limit is required and the adapter does not enforce it at all: routing will not use it. */
  satisfied: boolean
}

export interface PolicyExplanation {
  adapter: string
  /** False when a required limit is not enforced: this adapter may not run requests under this policy. */
  usable: boolean
  rows: PolicyExplanationRow[]
  /** The adapter's seccomp filter, on every run whatever the policy: the system calls it refuses. */
  syscallFilter?: SyscallFilterSummary
}

function setting(limit: PolicyLimit, policy: SecurityPolicy): string {
  switch (limit) {
    case 'wallTime':
      return `${policy.wallTimeMs} ms`
    case 'cpuTime':
      return `${policy.cpuTimeMs} ms`
    case 'memory':
      return `${policy.memoryMb} MiB`
    case 'output':
      return `${policy.outputBytes} bytes; ${policy.maxOutputs} rich outputs, ${policy.outputsBytes} bytes`
    case 'network':
      return policy.network === 'none' ? 'none' : policy.network.join(', ')
    case 'filesystem':
      return policy.filesystem
    case 'imports':
      return policy.allowedImports.join(', ') || 'none'
    case 'hostCalls':
      return `${policy.hostCalls.maxCount} calls, ${policy.hostCalls.maxTotalMs} ms`
    case 'processes':
      return String(policy.maxProcesses)
  }
}

/**
 * How one adapter holds each limit of a policy: `hard` (the backend stops it), `soft` (checked after the fact or
 * best effort) or `none`, from the adapter's declared enforcement table, and whether a `required` limit is met.
 */
export function explainPolicy(policy: SecurityPolicy, adapter: CodeExecutionAdapter): PolicyExplanation {
  const rows = POLICY_LIMITS.map((limit): PolicyExplanationRow => {
    const enforcement = adapter.capabilities.enforcement[limit]
    const required = policy.required.includes(limit)
    return { limit, setting: setting(limit, policy), enforcement, required, satisfied: !required || enforcement !== 'none' }
  })
  const { syscallFilter } = adapter.capabilities
  return { adapter: adapter.name, usable: rows.every((row) => row.satisfied), rows, ...(syscallFilter ? { syscallFilter } : {}) }
}
