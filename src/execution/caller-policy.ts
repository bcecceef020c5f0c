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
  /** `security.requestFiles`: whether code may read the files its own request sent under `filesystem: none`. @default 'read' */
  requestFiles?: 'read' | 'refuse'
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
  // The request's own files are the caller's data: a fresh workspace holds only them, so reading it reads nothing else.
  if (request.files?.length && fresh && base.filesystem === 'none') {
    if ((policies.requestFiles ?? 'read') === 'refuse') return { refusal: filesRefusal(request, profileName, policies) }
    base = Object.freeze({ ...base, filesystem: 'read_only' })
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
  return resolution
}

/** A request that sends files its policy may not read, refused before it runs, naming the profiles that would read them. */
function filesRefusal(request: ExecutionRequest, profileName: string | undefined, policies: CallerPolicies): ExecutionResult {
  const readers = Object.entries(policies.profiles ?? {})
    .filter(([, profile]) => profile.filesystem !== 'none')
    .map(([name]) => `"${name}"`)
  const files = request.files!.map((file) => file.path)
  return errorResult(
    'policy_violation',
    SERVICE,
    new ExecgateError('EXECGATE_FILES_NOT_READABLE', {
      files: `${files.slice(0, 5).join(', ')}${files.length > 5 ? `, and ${files.length - 5} more` : ''}`,
      policy: profileName === undefined ? 'the default policy' : `the policy profile "${profileName}"`,
      allow:
        readers.length > 0
          ? `the policy profile${readers.length > 1 ? 's' : ''} ${readers.join(', ')} would read them`
          : "no policy profile reads files: an operator can set a profile's filesystem to read_only",
    }),
  )
}
