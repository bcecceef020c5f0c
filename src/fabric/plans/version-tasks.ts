import { describeError } from '../../core'
import type { PlanEngineOptions } from './plan-engine-options'
import { currentVersion } from './plan-revision'
import { stepWorkspacePrefix, taskSpecFor } from './plan-steps'
import type { Plan, PlanVersion } from './plan-types'
import type { Task } from '../tasks'
import { planVersionRecord } from './plan-versions'

type VersionTaskOptions = Pick<PlanEngineOptions, 'tasks' | 'taskStore' | 'settings' | 'recordVersion' | 'logger'>

/**
 * Records the current version, then submits its tasks not in the store yet (kept runs are already there; none for
 * a new plan: `fresh`), and answers them as submitted. Every path to a version's first run comes through here (a
 * submission, an accepted revision, a restart that finds a version without its tasks), so no version runs
 * unrecorded, and recording again answers the first.
 */
export async function submitVersionTasks(options: VersionTaskOptions, plan: Plan, fresh = false): Promise<Task[]> {
  const version = currentVersion(plan)
  await recordVersion(options, plan, version)
  const existing = new Set(fresh ? [] : (await options.taskStore.getMany(version.steps.map((step) => step.taskId))).map((task) => task.id))
  const steps = version.steps.filter((step) => !existing.has(step.taskId))
  if (steps.length === 0) return []
  const { workspaceAccess } = options.settings
  // A step's bucket prefix is its own in this version: a retry empties it, a revision's rerun gets another.
  const prefixes = new Map(steps.map((step) => [step.taskId, stepWorkspacePrefix(plan.id, step.id, version.version)]))
  const workspaceOf = plan.workspace === 's3' ? (taskId: string) => ({ kind: 'bucket' as const, prefix: prefixes.get(taskId)! }) : undefined
  // Their first log entries reach the plan's log with the next copy, in the task log's order like every other.
  return options.tasks.scheduler.submit(
    steps.map((step) => taskSpecFor(plan, version, step)),
    {
      tenant: plan.tenant,
      ...(plan.profile ? { profile: plan.profile } : {}),
      ...(workspaceAccess ? { workspaceAccess } : {}),
      ...(workspaceOf ? { workspaceOf } : {}),
      // A new plan's step task ids are made of its id, made just now: no task can hold one yet (none is looked up).
      ...(fresh ? { ownIds: true } : {}),
    },
  )
}

/**
 * The ledger's record of a version, queued before its steps run so their runs' records name it (`prov:plan`). A
 * ledger that cannot write now keeps the record queued ahead of the runs and writes it when it can: the plan goes on.
 */
async function recordVersion(options: VersionTaskOptions, plan: Plan, version: PlanVersion): Promise<void> {
  try {
    await options.recordVersion?.(planVersionRecord(plan, version))
  } catch (error) {
    options.logger?.warn(
      { planId: plan.id, version: version.version, err: describeError(error) },
      'the plan version was not recorded in the ledger yet',
    )
  }
}
