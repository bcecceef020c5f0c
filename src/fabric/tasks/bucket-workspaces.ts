import { S3Workspace, type S3Objects, type Workspace, type WorkspaceLimits } from '../../workspace'
import type { Task } from './task-types'

/**
 * Opens the bucket workspace of a task that keeps one (`task.workspace`): `<bucket prefix>workspaces/<task prefix>`,
 * emptied first, so each attempt starts from what its request brings exactly as a fresh in-memory workspace would,
 * and what the run wrote stays there after it for the operator (and any node) to read.
 */
export function bucketTaskWorkspaces(bucket: S3Objects, limits: WorkspaceLimits): (task: Task) => Promise<Workspace> {
  const root = bucket.under('workspaces/')
  return async (task) => {
    const workspace = new S3Workspace(root.under(task.workspace!.prefix), limits)
    await workspace.clear()
    return workspace
  }
}
