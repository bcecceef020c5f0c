import { rulesWithin } from './network-rules'
import { FILESYSTEM_ACCESS, type ExecutionRequest, type NetworkAccess, type PolicyOverrides, type SecurityPolicy } from '../core'

/** Why a request's policy could not be resolved: it tried to loosen `limit`. */
export interface PolicyLoosening {
  limit: string
  message: string
}

export type PolicyResolution = { policy: SecurityPolicy; loosening?: undefined } | { policy?: undefined; loosening: PolicyLoosening }

const NUMERIC_LIMITS = ['wallTimeMs', 'cpuTimeMs', 'memoryMb', 'outputBytes', 'maxProcesses', 'maxOutputs', 'outputsBytes'] as const

/** A request's rules must each fall within one of the caller's (`*.example.com` covers `api.example.com:443`). */
function networkWithin(requested: NetworkAccess, allowed: NetworkAccess): boolean {
  if (requested === 'none') return true
  if (allowed === 'none') return false
  return rulesWithin(requested, allowed)
}

/**
 * Applies a request's overrides to the caller's policy. A request may only tighten: a larger number, a wider
 * network, more filesystem access or an import the caller does not allow is refused, naming the limit.
 * `timeoutMs` and `memoryMb` on the request are shorthands for `policy.wallTimeMs` and `policy.memoryMb`.
 */
export function resolvePolicy(
  base: SecurityPolicy,
  request: Pick<ExecutionRequest, 'timeoutMs' | 'memoryMb' | 'policy'>,
): PolicyResolution {
  // Most requests tighten nothing: the caller's policy as it is, without a copy of overrides to find that out.
  if (request.policy === undefined && request.timeoutMs === undefined && request.memoryMb === undefined) return { policy: base }
  const overrides: PolicyOverrides = { ...request.policy }
  if (request.timeoutMs !== undefined) overrides.wallTimeMs = Math.min(request.timeoutMs, overrides.wallTimeMs ?? Infinity)
  if (request.memoryMb !== undefined) overrides.memoryMb = Math.min(request.memoryMb, overrides.memoryMb ?? Infinity)
  if (Object.keys(overrides).length === 0) return { policy: base }

  const loosen = (limit: string, detail: string): PolicyResolution => ({
    loosening: { limit, message: `the request may only tighten the policy: ${limit} ${detail}` },
  })
  const merged: { -readonly [K in keyof SecurityPolicy]: SecurityPolicy[K] } = { ...base }

  for (const limit of NUMERIC_LIMITS) {
    const value = overrides[limit]
    if (value === undefined) continue
    if (value > base[limit]) return loosen(limit, `${value} is above the allowed ${base[limit]}`)
    merged[limit] = value
  }
  if (overrides.hostCalls) {
    const hostCalls = { ...base.hostCalls }
    for (const key of ['maxCount', 'maxTotalMs'] as const) {
      const value = overrides.hostCalls[key]
      if (value === undefined) continue
      if (value > base.hostCalls[key]) return loosen(`hostCalls.${key}`, `${value} is above the allowed ${base.hostCalls[key]}`)
      hostCalls[key] = value
    }
    merged.hostCalls = hostCalls
  }
  if (overrides.network !== undefined) {
    if (!networkWithin(overrides.network, base.network)) {
      const allowed = base.network === 'none' ? 'none' : base.network.join(', ')
      return loosen('network', `asks for ${JSON.stringify(overrides.network)} but the allowed network is ${allowed}`)
    }
    merged.network = overrides.network
  }
  if (overrides.filesystem !== undefined) {
    if (FILESYSTEM_ACCESS.indexOf(overrides.filesystem) > FILESYSTEM_ACCESS.indexOf(base.filesystem)) {
      return loosen('filesystem', `"${overrides.filesystem}" is wider than the allowed "${base.filesystem}"`)
    }
    merged.filesystem = overrides.filesystem
  }
  if (overrides.allowedImports !== undefined) {
    const extra = overrides.allowedImports.filter((name) => !base.allowedImports.includes(name))
    if (extra.length > 0) return loosen('allowedImports', `adds ${extra.join(', ')}, which the policy does not allow`)
    merged.allowedImports = overrides.allowedImports
  }
  if (overrides.required !== undefined) {
    // Requiring more enforcement only tightens; the caller's own requirements always stay.
    merged.required = [...new Set([...base.required, ...overrides.required])]
  }
  return { policy: Object.freeze(merged) }
}
