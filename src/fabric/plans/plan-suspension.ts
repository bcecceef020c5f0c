import type { Task, TaskScheduler } from '../tasks'
import { ENGINE_REASON_PREFIX } from './plan-steps'
import type { Plan } from './plan-types'

/**
 * A suspended plan's hold on its steps. The plan's state is what counts: while it is SUSPENDED every step of its
 * current version that has not ended is held (its task SUSPENDED, with a reason naming the plan, so the engine never
 * reads it as the step's failure); once it is RUNNING again, every step it held is let go (its task resumed). Both
 * are applied again at every look at the plan, so a crash between the plan's write and its tasks', a step that was
 * just starting, or a suspend from another process all settle within a tick.
 */

/** The reason of a task held by its suspended plan; `failureOf` does not count it (it starts like the engine's). */
export function suspensionReason(planId: string): string {
  return `${ENGINE_REASON_PREFIX}${planId} suspended`
}

/** Whether the task is suspended because its plan was, not by its own run or by a person. */
export function heldByPlan(task: Task, planId: string): boolean {
  return task.state === 'SUSPENDED' && task.reason === suspensionReason(planId)
}

/** How long a suspend waits for a step caught starting (SPAWNING cannot be suspended) before the tick takes over. */
const STARTING_WAIT_MS = 1000
const STARTING_POLL_MS = 25

/**
 * Makes the plan's current steps match its state: SUSPENDED holds every pending or running one, RUNNING resumes every
 * one it held. `tasks` are the plan's tasks as just read, `read` reads them again. Resolves with whether a task moved.
 */
export async function alignSteps(
  scheduler: Pick<TaskScheduler, 'suspend' | 'resume'>,
  plan: Plan,
  tasks: ReadonlyMap<string, Task>,
  read: () => Promise<ReadonlyMap<string, Task>>,
): Promise<boolean> {
  const taskIds = plan.versions.at(-1)!.steps.map((step) => step.taskId)
  let moved = false
  if (plan.state === 'RUNNING') {
    for (const id of taskIds) {
      const task = tasks.get(id)
      if (task && heldByPlan(task, plan.id)) moved = !!(await scheduler.resume(id)) || moved
    }
    return moved
  }
  if (plan.state !== 'SUSPENDED') return false
  for (const until = Date.now() + STARTING_WAIT_MS; ; tasks = await read()) {
    for (const id of taskIds) {
      const task = tasks.get(id)
      if (task && (task.state === 'PENDING' || task.state === 'RUNNING'))
        moved = !!(await scheduler.suspend(id, suspensionReason(plan.id))) || moved
    }
    // A step caught between its claim and its run (SPAWNING) is held once it runs: looked at again shortly.
    if (!taskIds.some((id) => tasks.get(id)?.state === 'SPAWNING') || Date.now() >= until) return moved
    await new Promise((resolve) => setTimeout(resolve, STARTING_POLL_MS))
  }
}
