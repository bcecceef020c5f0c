import { LANES } from '../core/types'

/**
 * `admission.tenants` and `admission.agentTypes` are JSON objects (convict's `format: Object`), checked after
 * convict's own validation like `security.profiles`, with messages that name the entry and the field.
 */

const TENANT_LANES = ['lane', 'defaultLane'] as const
const TENANT_COUNTS = ['maxConcurrent', 'maxQueued', 'cpuMsPerMinute', 'egressRequestsPerMinute', 'egressBytesPerMinute'] as const
const AGENT_TYPE_COUNTS = ['maxConcurrent', 'maxWallTimeMs', 'maxCpuTimeMs', 'maxMemoryMb'] as const

function checkEntries(value: unknown, what: string, lanes: readonly string[], counts: readonly string[]): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`must be a JSON object of ${what}`)
  for (const [name, entry] of Object.entries(value)) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new Error(`${name} must be an object`)
    for (const [field, setting] of Object.entries(entry)) {
      if (lanes.includes(field)) {
        if (!(LANES as readonly unknown[]).includes(setting)) throw new Error(`${name}.${field} must be one of ${LANES.join(', ')}`)
      } else if (counts.includes(field)) {
        if (typeof setting !== 'number' || !Number.isInteger(setting) || setting < 0)
          throw new Error(`${name}.${field} must be an integer of 0 or more`)
      } else {
        throw new Error(`${name}.${field} is not a setting (${[...lanes, ...counts].join(', ')})`)
      }
    }
  }
}

export function checkAdmissionTenants(value: unknown): void {
  checkEntries(value, 'tenant name → lane and quotas', TENANT_LANES, TENANT_COUNTS)
}

export function checkAgentTypes(value: unknown): void {
  checkEntries(value, 'agent type → caps', [], AGENT_TYPE_COUNTS)
}
