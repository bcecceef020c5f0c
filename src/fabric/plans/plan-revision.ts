import type { ExecutionRequest, ValidationReport } from '../../core'
import type { ExecuteOptions } from '../../execution/types'
import type { Task, WorkspaceAccess } from '../tasks'
import { findGraphProblem } from './plan-schema'
import { changesBetween, failureOf, recordsFor, requestFor, specOf } from './plan-steps'
import type { RevisionContext } from './reflector'
import type { Plan, PlanChanges, PlanStepRecord, PlanStepSpec, PlanVersion } from './plan-types'

/**
 * What the fix-plan loop decides about a reflector's reply: the context it is shown, and whether a reply becomes the
 * next version (the graph acyclic with every dependency known, within `maxSteps`, every new or changed step passing
 * the policy's static checks for the plan's caller) or is refused with the reason.
 */

/** The ExecutionService's `check`: what `execute` would refuse for this caller before anything runs. */
export type StepCheck = (request: ExecutionRequest, options: ExecuteOptions) => ValidationReport

export interface RevisionRules {
  check: StepCheck
  maxSteps: number
  workspaceAccess?: WorkspaceAccess
}

export function currentVersion(plan: Pick<Plan, 'versions' | 'version'>): PlanVersion {
  return plan.versions.find((version) => version.version === plan.version) ?? plan.versions[plan.versions.length - 1]!
}

/** What `execute` would report on the step's run for the plan's caller (its code's static checks included). */
export function stepCheck(rules: RevisionRules, plan: Pick<Plan, 'tenant' | 'profile'>, step: PlanStepSpec): ValidationReport {
  return rules.check(requestFor(step), {
    tenant: plan.tenant,
    ...(plan.profile ? { profile: plan.profile } : {}),
    ...(rules.workspaceAccess ? { workspaceAccess: rules.workspaceAccess } : {}),
  })
}

/** The first error a step's check reports, as a sentence naming the step and the line; undefined when it passes. */
export function stepCheckProblem(rules: RevisionRules, plan: Pick<Plan, 'tenant' | 'profile'>, step: PlanStepSpec): string | undefined {
  return checkProblem(stepCheck(rules, plan, step), step)
}

/** stepCheckProblem's answer from the step's report (stepCheck). */
export function checkProblem(report: ValidationReport, step: Pick<PlanStepSpec, 'id'>): string | undefined {
  const issue = report.issues.find((item) => item.severity === 'error')
  if (!issue) return undefined
  return `step "${step.id}": ${issue.message}${issue.line ? ` (line ${issue.line})` : ''}`
}

/** The failed steps of the current version (the one being revised first) and the completed ones, with their tasks. */
export function revisionContext(plan: Plan, tasks: ReadonlyMap<string, Task>, allowedImports: readonly string[]): RevisionContext {
  const version = currentVersion(plan)
  const withTasks = version.steps.flatMap((step) => (tasks.has(step.taskId) ? [{ step, task: tasks.get(step.taskId)! }] : []))
  const failed = withTasks
    .filter(({ task }) => failureOf(task) !== undefined)
    .sort((a, b) => Number(b.step.id === plan.failedStep) - Number(a.step.id === plan.failedStep))
  // The refusals of this round: the refused attempts since the last accepted one.
  const lastAccepted = plan.revisions.map((revision) => revision.accepted).lastIndexOf(true)
  return {
    ...(plan.goal ? { goal: plan.goal } : {}),
    version: version.version,
    steps: version.steps,
    failed,
    completed: withTasks.filter(({ task }) => task.state === 'COMPLETED'),
    refusals: plan.revisions.slice(lastAccepted + 1).map((revision) => revision.reason),
    allowedImports,
  }
}

export type RevisionDecision =
  { records: PlanStepRecord[]; changes: PlanChanges; problem?: undefined } | { problem: string; records?: undefined }

/**
 * Decides a reply: the next version is the current version's completed steps (kept unless the reply lists them
 * again) and the reply's steps. `completed` holds every completed task of the plan's versions, for reuse.
 */
export function decideRevision(
  rules: RevisionRules,
  plan: Plan,
  reply: readonly PlanStepSpec[],
  completed: ReadonlyMap<string, Task>,
): RevisionDecision {
  const version = currentVersion(plan)
  const replied = new Set<string>()
  for (const step of reply) {
    if (replied.has(step.id)) return { problem: `step id "${step.id}" appears twice in the reply` }
    replied.add(step.id)
  }
  const kept = version.steps.filter((step) => completed.has(step.taskId) && !replied.has(step.id)).map(specOf)
  const steps = [...kept, ...reply.map(specOf)]
  const graph = findGraphProblem(steps)
  if (graph) return { problem: graph }
  if (steps.length > rules.maxSteps)
    return { problem: `the revised plan has ${steps.length} steps; at most ${rules.maxSteps} are allowed (fabric.plans.maxSteps)` }
  const records = recordsFor(plan, steps, plan.version + 1, completed)
  for (const record of records) {
    if (record.reusedFrom !== undefined) continue
    const problem = stepCheckProblem(rules, plan, record)
    if (problem) return { problem }
  }
  return { records, changes: changesBetween(version, records) }
}
