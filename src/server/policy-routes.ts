import type { FastifyInstance } from 'fastify'
import type { SecurityPolicy } from '../core'
import type { Execgate } from '../index'
import { policyFromConfig, profilesFromConfig } from '../policy'
import type { Tenant } from './tenants'

/** What `GET /v1/policy` answers: the policy the caller's runs start from and the profiles it may ask for. */
export interface CallerPolicyView {
  /** The caller's starting profile (the tenant's), or null for the configured default policy. */
  profile: string | null
  policy: SecurityPolicy
  /** Profiles the caller may name with `X-Execgate-Profile`, each with its whole policy. */
  profiles: { name: string; policy: SecurityPolicy }[]
  /** `security.requestFiles`: whether code reads the files its own request sent under `filesystem: none`. */
  requestFiles: 'read' | 'refuse'
}

/**
 * `GET /v1/policy`: what a caller may run under, so an agent refused an import (or files) can see which profile to ask
 * for instead of guessing. A tenant sees only the profiles `server.tenants` lets it use; the open server's caller, all.
 */
export function registerPolicyRoutes(app: FastifyInstance, execgate: Execgate, options: { tenants: ReadonlyMap<string, Tenant> }): void {
  const config = execgate.config
  const all = profilesFromConfig(config)
  const base = policyFromConfig(config)
  app.get('/v1/policy', async (request): Promise<CallerPolicyView> => {
    const tenant = request.tenant
    const names = options.tenants.size > 0 ? tenant.profiles : Object.keys(all)
    const own = tenant.profile && all[tenant.profile] ? tenant.profile : undefined
    return {
      profile: own ?? null,
      policy: own ? all[own]! : base,
      profiles: names.filter((name) => all[name]).map((name) => ({ name, policy: all[name]! })),
      requestFiles: config.security.requestFiles,
    }
  })
}
