import type { ExecutionRequest } from '../../core'
import type { ExecuteOptions } from '../../execution/types'
import type { Workspace } from '../../workspace'
import type { Task } from './task-types'

/**
 * One task run as the ExecutionService takes it: the request carries the task's admission lane and priority (batch
 * unless the task says a person is waiting) and its own time limit where that is tighter, and the options name its
 * tenant, so admission's per-tenant quotas count task runs like any other, and the workspace it keeps in the bucket,
 * if any. This is the one place that maps a task onto a run.
 *
 * The request is built with the task's fields named first and the request spread over them, then set again: V8
 * (Node 20) gives an object made by a spread and then given a property the spread source lacks (`{ ...request,
 * lane }`) a hidden class of its own, so every run's request had a new one and each step of the run that reads it
 * (validation, policy, admission, the adapter, the ledger) went megamorphic: +11–18 µs a trivial run, measured
 * against a request of a shared class. Named first, every request of the same fields shares one class.
 */
export function runInputsFor(
  task: Task,
  request: ExecutionRequest,
  signal: AbortSignal,
  onOutput: ExecuteOptions['onOutput'],
  onRichOutput: ExecuteOptions['onRichOutput'],
  workspace?: Workspace,
): { request: ExecutionRequest; options: ExecuteOptions } {
  const runRequest: ExecutionRequest = { lane: task.lane, priority: task.priority, ...request }
  runRequest.lane = task.lane
  runRequest.priority = task.priority
  // The task's own limit only ever tightens the request's.
  if (task.timeoutMs) runRequest.timeoutMs = Math.min(task.timeoutMs, request.timeoutMs ?? task.timeoutMs)
  return {
    request: runRequest,
    options: {
      signal,
      onOutput,
      onRichOutput,
      tenant: task.tenant,
      ...(task.profile ? { profile: task.profile } : {}),
      ...(task.workspaceAccess ? { workspaceAccess: task.workspaceAccess } : {}),
      // The task's own workspace, emptied for this attempt: the grant reaches it as it would a fresh one.
      ...(workspace ? { workspace, freshWorkspace: true } : {}),
      provenance: { ...task.provenance, taskId: task.id, attempt: task.attempts },
    },
  }
}
