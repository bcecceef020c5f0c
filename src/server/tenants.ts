import { ExecgateError } from '../core'
import type { Config } from '../config/load'
import { apiKeyEntries } from '../config/api-keys'

/** A caller of the HTTP API or the MCP endpoint, known by its API key. */
export interface Tenant {
  name: string
  /** The tenant's starting policy profile (`security.profiles`), if any. */
  profile?: string
  /** Profiles it may ask for with `X-Execgate-Profile`. */
  profiles: readonly string[]
  ratePerMinute: number
}

/** The open server's single caller, when no API key is configured (loopback only). */
export const ANONYMOUS: Tenant = { name: 'anonymous', profiles: [], ratePerMinute: Number.MAX_SAFE_INTEGER }

/**
 * API keys → tenants, from `server.apiKeys` and `EXECGATE_API_KEYS` (`tenant=key`, comma-separated), with each
 * tenant's profile and rate from `server.tenants`. Checked once at start; a bad entry names itself (never the key).
 */
export function tenantsByKey(config: Config, env: NodeJS.ProcessEnv = process.env): Map<string, Tenant> {
  const entries = apiKeyEntries(config, env)
  const byKey = new Map<string, Tenant>()
  const profiles = config.security.profiles
  for (const [index, entry] of entries.entries()) {
    const at = entry.indexOf('=')
    const name = entry.slice(0, at)
    const key = entry.slice(at + 1)
    if (at < 1 || key.length < 16 || !/^[A-Za-z0-9_.-]+$/.test(name)) {
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
        detail:
          `server.apiKeys[${index}]: must be "tenant=key" with a tenant name of letters, digits, _ ` +
          `. - and a key of at least 16 characters`,
      })
    }
    const settings = config.server.tenants[name] ?? {}
    for (const profile of [settings.profile, ...(settings.profiles ?? [])].filter((item): item is string => !!item)) {
      if (!profiles[profile])
        throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
          detail: `server.tenants.${name}: no profile named "${profile}" in security.profiles`,
        })
    }
    byKey.set(key, {
      name,
      profile: settings.profile,
      profiles: [...new Set([...(settings.profile ? [settings.profile] : []), ...(settings.profiles ?? [])])],
      ratePerMinute: settings.ratePerMinute ?? config.server.ratePerMinute,
    })
  }
  return byKey
}

/** A token bucket per tenant: `ratePerMinute` tokens, refilled continuously. */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>()

  constructor(private readonly now: () => number = Date.now) {}

  /** 0 when the request may go; otherwise the seconds until a token is back. */
  take(tenant: Tenant): number {
    const perMs = tenant.ratePerMinute / 60_000
    const now = this.now()
    const bucket = this.buckets.get(tenant.name) ?? { tokens: tenant.ratePerMinute, at: now }
    bucket.tokens = Math.min(tenant.ratePerMinute, bucket.tokens + (now - bucket.at) * perMs)
    bucket.at = now
    this.buckets.set(tenant.name, bucket)
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return 0
    }
    return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000))
  }
}
