import type { Language, SecurityPolicy } from '../../src/core'
import { DEFAULT_POLICY, staticCheck } from '../../src/policy'
import type { HostileCase } from './corpus'

/** The README's policy: 1 s, 64 MiB, 64 KiB output, no network, no filesystem, imports math/json/re. */
export const HOSTILE_POLICY: SecurityPolicy = Object.freeze({
  ...DEFAULT_POLICY,
  wallTimeMs: 1000,
  cpuTimeMs: 1000,
  memoryMb: 64,
  outputBytes: 64 * 1024,
  network: 'none',
  filesystem: 'none',
  allowedImports: ['math', 'json', 're'],
})

/**
 * The policy one case runs under: HOSTILE_POLICY plus what the case's `policy` adds (the imports and the workspace
 * access its payload needs to reach the sandbox: `import time` for a sleep the sandbox must stop, say). Only those
 * two fields can be widened; every limit stays the corpus's.
 */
export function casePolicy(hostileCase: HostileCase): SecurityPolicy {
  const added = hostileCase.policy
  if (!added) return HOSTILE_POLICY
  return Object.freeze({
    ...HOSTILE_POLICY,
    allowedImports: [...new Set([...HOSTILE_POLICY.allowedImports, ...(added.allowedImports ?? [])])],
    filesystem: added.filesystem ?? HOSTILE_POLICY.filesystem,
  })
}

/** The language a suite's requests carry: a `typescript` suite runs the JavaScript cases as TypeScript. */
export function corpusLanguage(language: Language): HostileCase['language'] {
  return language === 'typescript' ? 'javascript' : (language as HostileCase['language'])
}

/** What the service's static check refuses in this case's code under `policy` (empty: the code reaches an adapter). */
export function staticRefusals(hostileCase: HostileCase, language: Language, policy: SecurityPolicy): string[] {
  return staticCheck(language, hostileCase.code, policy)
    .filter((issue) => issue.severity === 'error')
    .map((issue) => issue.message)
}
