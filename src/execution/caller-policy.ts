import {
  ExecgateError,
  FILESYSTEM_ACCESS,
  errorResult,
  type ExecutionRequest,
  type ExecutionResult,
  type Language,
  type SecurityPolicy,
} from '../core'
import { resolvePolicy } from '../policy'
import type { ExecuteOptions } from './types'

const SERVICE = 'execgate'

/** The policies a caller may start from: config's default, the named profiles, and each language's profile. */
export interface CallerPolicies {
  basePolicy: SecurityPolicy
  profiles?: Readonly<Record<string, SecurityPolicy>>
  languageProfiles?: Readonly<Partial<Record<Language, string>>>
}

/** Step 2: the caller's policy (profile, options, the caller's workspace grant) tightened by the request, or the refusal. */
export function callerPolicy(
  request: ExecutionRequest,
  options: ExecuteOptions,
  policies: CallerPolicies,
): { policy: SecurityPolicy; refusal?: undefined } | { policy?: undefined; refusal: ExecutionResult } {
  const profileName = options.profile ?? policies.languageProfiles?.[request.language]
  const profile = profileName === undefined ? undefined : policies.profiles?.[profileName]
  if (profileName !== undefined && !profile) {
    return {
      refusal: errorResult(
        'invalid_request',
        SERVICE,
        new ExecgateError('EXECGATE_PROFILE_UNKNOWN', {
          name: profileName,
          known: Object.keys(policies.profiles ?? {}).join(', ') || 'none',
        }),
      ),
    }
  }
  let base = options.basePolicy ?? profile ?? policies.basePolicy
  // The grant covers only a fresh workspace: a session's or the caller's may hold more than this request brought.
  const fresh = request.sessionId === undefined && (options.workspace === undefined || options.freshWorkspace === true)
  if (options.workspaceAccess && fresh && FILESYSTEM_ACCESS.indexOf(options.workspaceAccess) > FILESYSTEM_ACCESS.indexOf(base.filesystem)) {
    base = Object.freeze({ ...base, filesystem: options.workspaceAccess })
  }
  const resolution = resolvePolicy(base, request)
  if (!resolution.policy) {
    return {
      refusal: errorResult(
        'policy_violation',
        SERVICE,
        new ExecgateError('EXECGATE_POLICY_LOOSENED', {
          detail: resolution.loosening.message.replace(/^the request may only tighten the policy: /, ''),
        }),
      ),
    }
  }
  return { policy: resolution.policy }
}
