import { ExecgateError, type ExecutionRequest, type ValidationReport } from '../../core'
import type { ExecuteOptions } from '../../execution/types'
import { RESUME_FIELDS, type ResumeChanges } from './task-scheduler'
import type { TaskSpec, WorkspaceAccess } from './task-types'

/**
 * A task's request checked against its caller's policy before anything is stored or moved: at submit (a request
 * looser than the tenant's profile is refused then, not accepted and TERMINATED when it runs) and at resume (the
 * task's request with the changes). The plan engine's steps are checked by the engine itself (plan-revision.ts).
 */

/** The ExecutionService's `check`: what a run would refuse for its caller before anything runs. */
export type RequestCheck = (request: ExecutionRequest, options: ExecuteOptions) => ValidationReport

/** Who the runs would be for: the task's tenant, profile and workspace grant. */
export interface CheckedCaller {
  tenant: string
  profile?: string
  workspaceAccess?: WorkspaceAccess
}

/**
 * The issues of `check` that are about the request and its limits: a loosening, a malformed value, an unknown
 * profile, files the policy may not read. The static checks of the code (imports, calls) stay the run's, as for
 * `POST /v1/executions`, so a task's code is judged by the adapter and policy that run it.
 */
const REQUEST_REFUSALS = new Set(['policy_violation', 'invalid_request'])

/**
 * The task's request with the loosest wall time it names: its request's `timeoutMs` or its own (which only ever
 * tightens the request's when it runs), so either one above the profile is refused, as each would be on its own.
 */
export function withLoosestTimeout(spec: Pick<TaskSpec, 'request' | 'timeoutMs'>): ExecutionRequest {
  const { request, timeoutMs } = spec
  return timeoutMs && timeoutMs > (request.timeoutMs ?? 0) ? { ...request, timeoutMs } : request
}

/** Why the run of `request` for `caller` would be refused for its request or limits, in plain words; undefined when it would not. */
export function requestRefusal(check: RequestCheck, request: ExecutionRequest, caller: CheckedCaller): string | undefined {
  return refusalIn(check(request, callerOptions(caller)))
}

/** The options a run for `caller` is checked with: its tenant, profile and workspace grant. */
export function callerOptions(caller: CheckedCaller): ExecuteOptions {
  return {
    tenant: caller.tenant,
    ...(caller.profile ? { profile: caller.profile } : {}),
    ...(caller.workspaceAccess ? { workspaceAccess: caller.workspaceAccess } : {}),
  }
}

/** requestRefusal's answer from a report `check` already made (the plan engine checks each step once for all it asks). */
export function refusalIn(report: ValidationReport): string | undefined {
  const refusal = report.issues.find((issue) => issue.severity === 'error' && REQUEST_REFUSALS.has(issue.code))
  return refusal?.message.replace(/^\[execgate\] /, '')
}

/**
 * Throws EXECGATE_REQUEST_INVALID for changes a resume cannot make (any field but `timeoutMs`, `memoryMb`, `adapter`,
 * `policy`): the code, files or tenant of a task are not a resume's to change, and a caller passed where the changes
 * go (`plans.resume(id, { tenant })`) must fail loudly rather than act as the default tenant.
 */
export function assertResumeChanges(changes: unknown): asserts changes is ResumeChanges {
  if (changes === undefined) return
  if (typeof changes !== 'object' || changes === null || Array.isArray(changes))
    throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'the changes of a resume must be an object' })
  const unknown = Object.keys(changes).find((key) => !RESUME_FIELDS.includes(key))
  if (unknown)
    throw new ExecgateError('EXECGATE_REQUEST_INVALID', {
      detail: `${unknown} cannot be changed on resume; only ${RESUME_FIELDS.join(', ')}`,
    })
}
