import type { Enforcement, PolicyLimit } from './types'
import { POLICY_LIMITS } from './types'

/** An enforcement table with every limit set to `none`, then the given ones; keeps adapters' tables short. */
export function enforcementTable(entries: Partial<Record<PolicyLimit, Enforcement>>): Readonly<Record<PolicyLimit, Enforcement>> {
  const table = Object.fromEntries(POLICY_LIMITS.map((limit) => [limit, entries[limit] ?? 'none'])) as Record<PolicyLimit, Enforcement>
  return Object.freeze(table)
}
