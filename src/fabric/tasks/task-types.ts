import type { ExecutionRequest, ExecutionResult, FilesystemAccess, WorkspaceFile } from '../../core'

/**
 * A durable task's data: the execution fabric design's task schema in our words, plus what the
 * scheduler records about it. Every store keeps exactly these shapes, so the scheduler's rules hold for all.
 */

/** The lifecycle as the seed draws it: PENDING → SPAWNING → RUNNING → SUSPENDED → TERMINATED, RUNNING → FAILED, SUSPENDED → COMPLETED. */
export const TASK_STATES = ['PENDING', 'SPAWNING', 'RUNNING', 'SUSPENDED', 'COMPLETED', 'FAILED', 'TERMINATED'] as const
export type TaskState = (typeof TASK_STATES)[number]

/** States a task never leaves. */
export const FINAL_STATES: readonly TaskState[] = ['COMPLETED', 'FAILED', 'TERMINATED']

export function isFinal(state: TaskState): boolean {
  return FINAL_STATES.includes(state)
}

/** Workspace access a submitter may grant a task's runs beyond its policy (`ExecuteOptions.workspaceAccess`). */
export type WorkspaceAccess = Exclude<FilesystemAccess, 'none'>

/**
 * Where a task's runs keep their workspace when not in this process's memory: a key prefix in the bucket
 * (`fabric.s3`), under `<fabric.s3.prefix>workspaces/`, emptied before each attempt so a retry starts from the same
 * inputs as the first run. The plan engine sets it for a plan whose workspace is `s3` (docs/plans.md).
 */
export interface TaskWorkspace {
  kind: 'bucket'
  /** Relative to `<fabric.s3.prefix>workspaces/`, ending in `/`, e.g. `plans/<planId>/<stepId>/v1/`. */
  prefix: string
}

/** The admission lane the task's runs ask for: batch unless the task says a person is waiting. */
export type TaskLane = 'interactive' | 'batch'

/**
 * Kinds of failure a retry policy may call retryable. `backend` covers `unavailable`, `internal_error` and a process
 * that died with the task in flight; `error` is the user's own exception, not retried unless asked for.
 */
export const RETRYABLE_FAILURES = ['backend', 'error'] as const
export type RetryableFailure = (typeof RETRYABLE_FAILURES)[number]

export interface RetryPolicy {
  /** Runs in all, the first included. @default 3 */
  maxAttempts: number
  /** @default 'exponential' */
  backoff: 'exponential' | 'linear'
  /** Delay before the second attempt, in ms. @default 200 */
  baseDelayMs: number
  /** No delay is longer than this. @default 30000 */
  maxDelayMs: number
  /** Spread retries by up to ±20 % so a burst of failures does not retry in lockstep. @default true */
  jitter: boolean
  /** @default ['backend'] */
  retryOn: RetryableFailure[]
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze<RetryPolicy>({
  maxAttempts: 3,
  backoff: 'exponential',
  baseDelayMs: 200,
  maxDelayMs: 30_000,
  jitter: true,
  retryOn: ['backend'],
})

/** What a task needs of the machine (the seed's `requirements`); recorded and shown, the policy enforces limits. */
export interface TaskRequirements {
  /** CPU units (1 = one core). */
  compute?: number
  memoryBytes?: number
  network?: boolean
}

/** What a caller submits. */
export interface TaskSpec {
  /** The task's id, when the caller chooses it (to name tasks of one batch in each other's dependencies). @default a UUID */
  id?: string
  /** The execution itself: language, code, files, policy, adapter pin. */
  request: ExecutionRequest
  /** The caller's correlation id (the seed's `intent_id`). */
  intentId?: string
  /** Higher runs first. @default 0 */
  priority?: number
  /** Start-by time, ISO 8601: a task not started by then ends TERMINATED with reason `deadline`. */
  deadline?: string
  requirements?: TaskRequirements
  /** Task ids that must all be COMPLETED before this one starts. */
  dependencies?: string[]
  /**
   * Where a dependency's outputs appear in this task's workspace, by dependency id: a folder such as `steps/extract`
   * instead of `deps/<taskId>` (the plan engine names them by step). Dependencies not listed keep `deps/<taskId>`.
   */
  dependencyPaths?: Record<string, string>
  /** Wall-time limit of each run, in ms (tightens the policy like `request.timeoutMs`). */
  timeoutMs?: number
  retryPolicy?: Partial<RetryPolicy>
  /** Submitting again with the same key (per tenant) returns the first task instead of creating another. */
  idempotencyKey?: string
  /** @default 'batch' */
  lane?: TaskLane
  /** The plan step this task runs (set by the plan engine), carried into every run's provenance. */
  provenance?: TaskProvenance
}

/** What a task belongs to beyond itself: a plan's step. */
export interface TaskProvenance {
  planId?: string
  planVersion?: number
  stepId?: string
}

/** One entry of a task's ordered action log: every transition, with its time and reason. */
export interface TaskEvent {
  /** Position in the store's log; increases with every event of every task. */
  seq: number
  taskId: string
  /** ISO 8601. */
  at: string
  from: TaskState | null
  to: TaskState
  reason: string
  attempt: number
}

/** A task as stored and returned. */
export interface Task {
  id: string
  tenant: string
  state: TaskState
  request: ExecutionRequest
  intentId?: string
  priority: number
  deadline?: string
  requirements: TaskRequirements
  dependencies: string[]
  dependencyPaths?: Record<string, string>
  timeoutMs?: number
  retryPolicy: RetryPolicy
  idempotencyKey?: string
  lane: TaskLane
  /** Runs started so far. */
  attempts: number
  /** True once every dependency COMPLETED (always true without dependencies): only ready tasks are started. */
  ready: boolean
  /** The execgate running it (`host:pid#n`) while SPAWNING or RUNNING, so a restart knows which runs it lost. */
  owner?: string
  /** Epoch ms before which a PENDING task waiting to retry is not started. */
  notBefore: number
  /** The reason of the last transition, e.g. `deadline`, `timeout`, `dependency t-1 FAILED`. */
  reason: string
  /** The last run's result. */
  result?: ExecutionResult
  /** Files the last completed run wrote; dependents get them under `deps/<id>/`. */
  outputFiles?: WorkspaceFile[]
  /** The policy profile of the submitter (a tenant's), used for every run. */
  profile?: string
  /**
   * Access to each run's own fresh workspace granted by the submitter over its policy's `filesystem` (the plan engine
   * grants it so a step reads its dependencies' outputs); never set from a submitted spec.
   */
  workspaceAccess?: WorkspaceAccess
  /** Where each run's workspace lives, when not in memory (a plan step's, in the bucket); never set from a submitted spec. */
  workspace?: TaskWorkspace
  provenance?: TaskProvenance
  createdAt: string
  updatedAt: string
}
