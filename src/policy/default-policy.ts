import type { PolicyOverrides, SecurityPolicy } from '../core'
import type { Config } from '../config/load'

/**
 * The defaults of the placeholder design (5 s, 128 MiB, `math`/`json`/`datetime`, no network, no filesystem)
 * plus a 64 KiB output cap. Used when no config is loaded (tests of a single adapter, the hostile runner).
 */
export const DEFAULT_POLICY: SecurityPolicy = Object.freeze({
  wallTimeMs: 5000,
  cpuTimeMs: 5000,
  memoryMb: 128,
  outputBytes: 64 * 1024,
  network: 'none',
  filesystem: 'none',
  allowedImports: Object.freeze(['math', 'json', 'datetime']),
  hostCalls: Object.freeze({ maxCount: 100, maxTotalMs: 2000 }),
  maxProcesses: 32,
  maxOutputs: 10,
  outputsBytes: 2 * 1024 * 1024,
  required: Object.freeze([]),
}) as SecurityPolicy

export function policyFromConfig(config: Config): SecurityPolicy {
  return Object.freeze({ ...config.security.defaultPolicy }) as SecurityPolicy
}

/** A profile from `security.profiles` over the default policy. Profiles are the operator's: they may loosen it. */
export function policyFromProfile(base: SecurityPolicy, profile: PolicyOverrides): SecurityPolicy {
  return Object.freeze({
    ...base,
    ...profile,
    hostCalls: { ...base.hostCalls, ...(profile.hostCalls ?? {}) },
  }) as SecurityPolicy
}

/** Every configured profile, merged over the configured default policy. */
export function profilesFromConfig(config: Config): Record<string, SecurityPolicy> {
  const base = policyFromConfig(config)
  return Object.fromEntries(Object.entries(config.security.profiles).map(([name, profile]) => [name, policyFromProfile(base, profile)]))
}
