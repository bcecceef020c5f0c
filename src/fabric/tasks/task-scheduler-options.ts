import os from 'node:os'
import type { ExecutionRequest, ExecutionResult } from '../../core'
import type { ExecuteOptions } from '../../execution/types'
import type { Logger } from '../../observability/logger'
import type { Workspace } from '../../workspace'
import { ownerOfThisProcessAlive, ownerProcess } from '../owner-id'
import type { TaskDispatcher } from './bullmq-dispatcher'
import type { OutputRelay } from './output-relay'
import type { TaskOutput } from './task-outputs'
import type { TaskStore } from './task-store'
import type { Task, TaskEvent } from './task-types'

/** Runs one execution request: the ExecutionService's `execute`, which never rejects. */
export type ExecuteFunction = (request: ExecutionRequest, options: ExecuteOptions) => Promise<ExecutionResult>

export interface TaskSchedulerOptions {
  store: TaskStore
  execute: ExecuteFunction
  logger?: Logger
  /** Tasks this process runs at once. @default 4 */
  concurrency?: number
  /** How often due retries, deadlines and other processes' submissions are looked for, in ms. @default 200 */
  tickMs?: number
  /**
   * This scheduler's name in `task.owner`; a restart recovers the runs of owners that are gone. @default host:pid#n
   * (src/fabric/owner-id.ts) */
  owner?: string
  /**
   * Hands due tasks to processes with free slots (the distributed store's BullMQ queue). Without one, this process
   * polls the store for due tasks itself.
   */
  dispatcher?: TaskDispatcher
  /** Carries rich outputs to and from the other processes of the deployment (the Redis store's pub/sub). */
  outputRelay?: OutputRelay
  /** Whether an owner still runs (default: same host and its pid is alive), so a restart leaves live runs alone. */
  ownerAlive?: (owner: string) => boolean
  /**
   * Opens the workspace of a task that keeps one outside memory (`task.workspace`, a bucket prefix), emptied for the
   * attempt. Without it such a task's run fails naming the missing setting.
   */
  workspaceFor?: (task: Task) => Promise<Workspace>
  /**
   * Whether the task's run may be begun before the write that starts it (TaskRunner.early): a run begun so is dropped
   * when that write does not start the task, after it may have run its code. Only for a run that changes nothing but
   * its answer (the ExecutionService's `isRepeatable`). Without it no run is begun early.
   */
  repeatable?: (task: Task) => boolean
}

/** What `events()` yields: transitions from the action log, and output while this process runs the task. */
export type TaskStreamItem =
  | { type: 'transition'; event: TaskEvent }
  | { type: 'output'; taskId: string; stream: 'stdout' | 'stderr'; chunk: string }
  /** A rich output (an image, a table, a display() item) as the code made it (task-outputs.ts). */
  | ({ type: 'rich-output' } & TaskOutput)

/** Changes a resumed task may bring: other limits or another adapter (the failure table's "resumable"). */
export type ResumeChanges = Pick<ExecutionRequest, 'timeoutMs' | 'memoryMb' | 'adapter' | 'policy'>
/** The fields a resume may change (HTTP refuses a body naming any other). */
export const RESUME_FIELDS: readonly string[] = ['timeoutMs', 'memoryMb', 'adapter', 'policy'] satisfies Array<keyof ResumeChanges>

/** Same host and its pid alive, or in this process not retired (another machine's owner counts as alive: not ours to judge). */
export function defaultOwnerAlive(owner: string): boolean {
  const here = ownerOfThisProcessAlive(owner)
  if (here !== undefined) return here
  const { host, pid } = ownerProcess(owner)
  if (host !== os.hostname() || !Number.isInteger(pid)) return true // another machine's run: not ours to judge
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
