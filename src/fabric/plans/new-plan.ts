import { ExecgateError } from '../../core'
import { newRunId } from '../../execution/run-id'
import { refusalIn } from '../tasks'
import type { PlanCaller, PlanEngineOptions, PlanSettings } from './plan-engine-options'
import { checkProblem, stepCheck, type RevisionRules } from './plan-revision'
import { findPlanProblem } from './plan-schema'
import { recordsFor } from './plan-steps'
import type { Plan, PlanSpec, PlanVersion } from './plan-types'

/** What every version's steps are checked against: the policy's check, the step limit, the steps' workspace grant. */
export function planRules({ check, settings }: Pick<PlanEngineOptions, 'check' | 'settings'>): RevisionRules {
  return { check, maxSteps: settings.maxSteps, ...(settings.workspaceAccess ? { workspaceAccess: settings.workspaceAccess } : {}) }
}

/**
 * A submitted plan at its first version, RUNNING, checked before anything is stored: an invalid spec or a step the
 * code's static checks refuse (a forbidden import) throws EXECGATE_REQUEST_INVALID; a step whose limits loosen the
 * caller's profile is refused as a task's would be (EXECGATE_SUBMIT_REFUSED, naming the step and the limit).
 */
export function newPlan(spec: PlanSpec, caller: PlanCaller, settings: PlanSettings, rules: RevisionRules): Plan {
  const invalid = (detail: string) => new ExecgateError('EXECGATE_REQUEST_INVALID', { detail })
  const problem = findPlanProblem(spec, settings)
  if (problem) throw invalid(problem)
  const workspace = spec.workspace ?? settings.workspaces ?? 'memory'
  const at = new Date().toISOString()
  // Time-ordered (UUIDv7, as run and task ids): the plan's rows and its steps' tasks land at the end of every index
  // keyed by it (plans, their events, the tasks, their log and dependencies), not at a random page each.
  const draft = { id: newRunId(Date.parse(at)), versions: [] as PlanVersion[] }
  const version: PlanVersion = { version: 1, createdAt: at, reason: 'submitted', steps: recordsFor(draft, spec.steps, 1, new Map()) }
  const plan: Plan = {
    id: draft.id,
    tenant: caller.tenant,
    ...(caller.profile ? { profile: caller.profile } : {}),
    ...(spec.goal ? { goal: spec.goal } : {}),
    state: 'RUNNING',
    reason: 'submitted',
    version: 1,
    maxRevisions: spec.maxRevisions ?? settings.maxRevisions,
    priority: spec.priority ?? 0,
    lane: spec.lane ?? 'batch',
    ...(workspace === 's3' ? { workspace } : {}),
    versions: [version],
    revisions: [],
    rev: 1,
    createdAt: at,
    updatedAt: at,
  }
  // One check a step answers both questions (it is what a task's submit and a step's run would each ask).
  const reports = version.steps.map((step) => stepCheck(rules, plan, step))
  version.steps.forEach((step, index) => {
    const loosened = refusalIn(reports[index]!)
    if (loosened) throw new ExecgateError('EXECGATE_SUBMIT_REFUSED', { subject: 'the plan', reason: `step "${step.id}": ${loosened}` })
  })
  version.steps.forEach((step, index) => {
    const refused = checkProblem(reports[index]!, step)
    if (refused) throw invalid(refused)
  })
  return plan
}
