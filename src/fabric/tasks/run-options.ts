import type { ExecuteOptions } from '../../execution/types'
import type { Task, TaskLane } from './task-types'

/** What admission control reads from a run: its lane and priority (src/execution's admission, where present). */
export interface AdmissionHints {
  lane: TaskLane
  priority: number
}

/**
 * The options of one task run. The lane and priority go along with every run; an ExecutionService with admission
 * control reads them from ExecuteOptions, one without ignores them. This is the one place that maps a task onto
 * ExecuteOptions.
 */
export function executeOptionsFor(task: Task, signal: AbortSignal, onOutput: ExecuteOptions['onOutput']): ExecuteOptions & AdmissionHints {
  return { signal, onOutput, lane: task.lane, priority: task.priority, ...(task.profile ? { profile: task.profile } : {}) }
}
