import { ExecgateError, type SecurityPolicy } from '../../core'
import type { TenantAdmission } from './lanes'

/**
 * An agent type's caps (`admission.agentTypes.<name>`), after the execution fabric's table: research, planning,
 * execution, each with its own CPU (concurrent runs), memory and duration.
 */
export interface AgentTypeProfile {
  /** Runs of this agent type going at once; one more is refused. */
  maxConcurrent?: number
  maxWallTimeMs?: number
  maxCpuTimeMs?: number
  maxMemoryMb?: number
}

const MINUTE_MS = 60_000

/** What one tenant has running, waiting and spent; quotas are checked against it. */
export class TenantUsage {
  running = 0
  queued = 0
  /** (time, CPU ms) of runs that ended in the last minute, oldest first. */
  private readonly spent: { at: number; cpuMs: number }[] = []

  constructor(private readonly now: () => number = Date.now) {}

  record(cpuMs: number): void {
    this.spent.push({ at: this.now(), cpuMs })
  }

  /** CPU ms spent in the last minute, and when enough of it leaves the window to get back under `limit`. */
  cpuInWindow(limit: number): { used: number; freeInMs: number } {
    const now = this.now()
    while (this.spent.length > 0 && this.spent[0]!.at <= now - MINUTE_MS) this.spent.shift()
    let used = this.spent.reduce((sum, item) => sum + item.cpuMs, 0)
    let freeInMs = 0
    for (const item of this.spent) {
      if (used < limit) break
      used -= item.cpuMs
      freeInMs = item.at + MINUTE_MS - now
    }
    return { used: this.spent.reduce((sum, item) => sum + item.cpuMs, 0), freeInMs }
  }
}

/** The tenant's per-minute CPU quota, refused with its name and when it frees up; undefined when there is room. */
export function checkCpuQuota(tenant: string, settings: TenantAdmission | undefined, usage: TenantUsage | undefined): ExecgateError | undefined {
  const limit = settings?.cpuMsPerMinute
  if (!limit || !usage) return undefined
  const { used, freeInMs } = usage.cpuInWindow(limit)
  if (used < limit) return undefined
  return new ExecgateError('EXECGATE_QUOTA_EXCEEDED', {
    quota: `admission.tenants.${tenant}.cpuMsPerMinute`,
    detail: `tenant ${tenant} used ${Math.round(used)} of its ${limit} CPU ms in the last minute`,
    retryAfter: Math.max(1, Math.ceil(freeInMs / 1000)),
  })
}

/** A policy asking more than the agent type allows is refused naming the cap (never silently cut). */
export function checkAgentTypeLimits(name: string, profile: AgentTypeProfile, policy: SecurityPolicy): ExecgateError | undefined {
  const caps: [keyof AgentTypeProfile, number, string][] = [
    ['maxWallTimeMs', policy.wallTimeMs, 'a wall-time limit of'],
    ['maxCpuTimeMs', policy.cpuTimeMs, 'a CPU-time limit of'],
    ['maxMemoryMb', policy.memoryMb, 'a memory limit of'],
  ]
  for (const [key, asked, what] of caps) {
    const cap = profile[key]
    if (cap !== undefined && asked > cap) {
      return new ExecgateError('EXECGATE_QUOTA_LIMIT', { quota: `admission.agentTypes.${name}.${key}`, detail: `the run's policy asks for ${what} ${asked}, over the agent type's cap of ${cap}; ask for less (timeoutMs, memoryMb)` })
    }
  }
  return undefined
}
