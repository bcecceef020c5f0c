import { ExecgateError, type SecurityPolicy } from '../../core'
import type { TenantAdmission } from './lanes'
import type { EgressQuota } from '../../egress'
import { MinuteWindow } from './minute-window'

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
  /** (time, CPU ms) of runs that ended in the last minute, oldest first, from `first` on. */
  private readonly spent: { at: number; cpuMs: number }[] = []
  private first = 0
  /** The sum of `spent` from `first` on: checking the quota costs O(1) per run, not a walk over the minute's runs. */
  private total = 0

  /** Egress requests and bytes of the tenant's runs in the last minute, counted as they happen (tenantEgressQuota). */
  readonly egressRequests: MinuteWindow
  readonly egressBytes: MinuteWindow

  constructor(private readonly now: () => number = Date.now) {
    this.egressRequests = new MinuteWindow(now)
    this.egressBytes = new MinuteWindow(now)
  }

  record(cpuMs: number): void {
    this.spent.push({ at: this.now(), cpuMs })
    this.total += cpuMs
  }

  private expire(now: number): void {
    while (this.first < this.spent.length && this.spent[this.first]!.at <= now - MINUTE_MS) this.total -= this.spent[this.first++]!.cpuMs
    // Drop what left the window now and then, so the array stays the size of one minute's runs.
    if (this.first > 1024 && this.first * 2 > this.spent.length) {
      this.spent.splice(0, this.first)
      this.first = 0
    }
    if (this.first === this.spent.length) this.total = 0
  }

  /** CPU ms spent in the last minute, and when enough of it leaves the window to get back under `limit`. */
  cpuInWindow(limit: number): { used: number; freeInMs: number } {
    const now = this.now()
    this.expire(now)
    const used = this.total
    if (used < limit) return { used, freeInMs: 0 }
    let left = used
    let freeInMs = 0
    for (let index = this.first; index < this.spent.length && left >= limit; index++) {
      const item = this.spent[index]!
      left -= item.cpuMs
      freeInMs = item.at + MINUTE_MS - now
    }
    return { used, freeInMs }
  }
}

/** The tenant's per-minute CPU quota, refused with its name and when it frees up; undefined when there is room. */
export function checkCpuQuota(
  tenant: string,
  settings: TenantAdmission | undefined,
  usage: TenantUsage | undefined,
): ExecgateError | undefined {
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

/** The first of the tenant's egress quotas it has spent in the last minute: which, how much, and when it frees up. */
function spentEgressQuota(
  settings: TenantAdmission | undefined,
  usage: TenantUsage,
): { key: string; what: string; used: number; limit: number; freeInMs: number } | undefined {
  const quotas: [number | undefined, MinuteWindow, string, string][] = [
    [settings?.egressRequestsPerMinute, usage.egressRequests, 'egressRequestsPerMinute', 'egress requests'],
    [settings?.egressBytesPerMinute, usage.egressBytes, 'egressBytesPerMinute', 'bytes through the egress gateway'],
  ]
  for (const [limit, window, key, what] of quotas) {
    if (limit === undefined) continue
    const { used, freeInMs } = window.inWindow(limit)
    if (used >= limit) return { key, what, used, limit, freeInMs }
  }
  return undefined
}

/**
 * The tenant's per-minute egress quotas, for a run whose policy allows network (a run without network uses none and
 * is never refused for them): refused naming the quota and when it frees up; undefined when there is room.
 */
export function checkEgressQuota(
  tenant: string,
  settings: TenantAdmission | undefined,
  usage: TenantUsage | undefined,
): ExecgateError | undefined {
  const spent = usage && spentEgressQuota(settings, usage)
  if (!spent) return undefined
  return new ExecgateError('EXECGATE_QUOTA_EXCEEDED', {
    quota: `admission.tenants.${tenant}.${spent.key}`,
    detail:
      `tenant ${tenant} used ${spent.used} of its ${spent.limit} ${spent.what} in the last ` +
      `minute; a run without network is still admitted`,
    retryAfter: Math.max(1, Math.ceil(spent.freeInMs / 1000)),
  })
}

/**
 * An admitted run's live view of its tenant's egress quotas (undefined when the tenant has none): the gateway counts
 * every request and byte into the tenant's windows as they happen, and refuses the next request once a quota is
 * spent, by this run or by the tenant's others, so admission is not the only check.
 */
export function tenantEgressQuota(tenant: string, settings: TenantAdmission | undefined, usage: TenantUsage): EgressQuota | undefined {
  if (settings?.egressRequestsPerMinute === undefined && settings?.egressBytesPerMinute === undefined) return undefined
  return {
    refusal() {
      const spent = spentEgressQuota(settings, usage)
      if (!spent) return undefined
      const seconds = Math.max(1, Math.ceil(spent.freeInMs / 1000))
      return (
        `tenant ${tenant}'s egress quota is spent: ${spent.used} of its ${spent.limit} ` +
        `${spent.what} in the last minute (admission.tenants.${tenant}.${spent.key}); room again ` +
        `in ${seconds} s`
      )
    },
    countRequest: () => usage.egressRequests.add(1),
    countBytes: (bytes) => usage.egressBytes.add(bytes),
  }
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
      return new ExecgateError('EXECGATE_QUOTA_LIMIT', {
        quota: `admission.agentTypes.${name}.${key}`,
        detail: `the run's policy asks for ${what} ${asked}, over the agent type's cap of ${cap}; ask for less (timeoutMs, memoryMb)`,
      })
    }
  }
  return undefined
}
