import type { ExecutionRequest } from '../../core'
import type { ExecuteOptions } from '../../execution/types'
import type { Workspace } from '../../workspace'
import type { Task } from './task-types'

/**
 * One task run as the ExecutionService takes it: the request carries the task's admission lane and priority (batch
 * unless the task says a person is waiting), and the options name its tenant, so admission's per-tenant quotas count
 * task runs like any other, and the workspace it keeps in the bucket, if any. This is the one place that maps a task
 * onto a run.
 */
export function runInputsFor(
  task: Task,
  request: ExecutionRequest,
  signal: AbortSignal,
  onOutput: ExecuteOptions['onOutput'],
  workspace?: Workspace,
): { request: ExecutionRequest; options: ExecuteOptions } {
  return {
    request: { ...request, lane: task.lane, priority: task.priority },
    options: {
      signal,
      onOutput,
      tenant: task.tenant,
      ...(task.profile ? { profile: task.profile } : {}),
      ...(task.workspaceAccess ? { workspaceAccess: task.workspaceAccess } : {}),
      // The task's own workspace, emptied for this attempt: the grant reaches it as it would a fresh one.
      ...(workspace ? { workspace, freshWorkspace: true } : {}),
      provenance: { ...task.provenance, taskId: task.id, attempt: task.attempts },
    },
  }
}
