import { ExecgateError } from '../../core'
import { requestRefusal, type RequestCheck, type ResumeChanges, type TaskStore } from '../tasks'
import { currentVersion } from './plan-revision'
import { heldByPlan } from './plan-suspension'
import type { Plan } from './plan-types'

/**
 * A suspended plan resumed with changed limits (`timeoutMs`, `memoryMb`, `adapter`, `policy`, as a task's resume
 * takes them). The changes go to the steps the plan holds, the ones that run again when it resumes; each is checked
 * as its task's own resume is (the task's request with the changes, under the plan's profile and the engine's
 * workspace grant). One step the changes would loosen, or a malformed value, refuses the whole resume
 * (EXECGATE_RESUME_REFUSED naming the step and the limit) before any task or the plan moves. Completed steps keep
 * their runs, and steps a later revision writes are checked when it is written (plan-revision.ts).
 */

/** What the plan's log says of a resume with changes, e.g. `resumed by the caller with memoryMb, policy changed`. */
export function resumeReason(changes: ResumeChanges): string {
  const fields = Object.keys(changes)
  return fields.length ? `resumed by the caller with ${fields.join(', ')} changed` : 'resumed by the caller'
}

/**
 * Checks the changes on every step the plan holds, then writes them into those steps' tasks (still SUSPENDED: the
 * engine's resume lets them go). Throws EXECGATE_RESUME_REFUSED, changing nothing, when a step's check refuses.
 */
export async function applyResumeChanges(
  plan: Plan,
  changes: ResumeChanges,
  tasks: Pick<TaskStore, 'getMany' | 'update'>,
  check: RequestCheck,
): Promise<void> {
  if (Object.keys(changes).length === 0 || plan.state !== 'SUSPENDED') return
  const steps = currentVersion(plan).steps
  const byId = new Map((await tasks.getMany(steps.map((step) => step.taskId))).map((task) => [task.id, task]))
  const held = steps.flatMap((step) => {
    const task = byId.get(step.taskId)
    return task && heldByPlan(task, plan.id) ? [{ step, task }] : []
  })
  for (const { step, task } of held) {
    const reason = requestRefusal(check, { ...task.request, ...changes }, task)
    if (reason) throw new ExecgateError('EXECGATE_RESUME_REFUSED', { subject: `plan ${plan.id}`, reason: `step "${step.id}": ${reason}` })
  }
  // A task that moved meanwhile (another resume got there first) keeps what that resume gave it.
  for (const { task } of held) await tasks.update(task.id, 'SUSPENDED', { request: { ...task.request, ...changes } })
}
