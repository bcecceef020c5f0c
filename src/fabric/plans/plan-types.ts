import type { ExecutionResult, FileReference, Language, Output } from '../../core'
import type { TaskLane, TaskState } from '../tasks/task-types'

/**
 * A plan's data: what a caller submits (a DAG of steps), and what the engine records about it (versions, revision
 * attempts, the transitions of the plan and of its steps). docs/plans.md describes each field.
 */

/** Limits of one step's runs; each may only tighten the caller's policy. */
export interface PlanStepLimits {
  /** Wall time of each run, in ms. */
  timeoutMs?: number
  memoryMb?: number
  /** Cap on stdout + stderr + value, in bytes. */
  outputBytes?: number
  /** Runs in all when a backend fails (the step's own retries, before the reflector is asked). @default 3 */
  maxAttempts?: number
}

/** One step as submitted (and as the reflector writes it). */
export interface PlanStepSpec {
  /** `[A-Za-z0-9_-]{1,64}`, unique in the plan; its outputs appear to dependents under `steps/<id>/`. */
  id: string
  /** What the step does, in words: shown with its state and given to the reflector. */
  description?: string
  language: Language
  /** The program; for `bash`, the shell command(s). The value of its last expression is the step's value. */
  code: string
  /** Ids of the steps whose outputs it reads; it starts once they all completed. */
  dependsOn?: string[]
  /**
   * Files uploaded by digest (`PUT /v1/files`, docs/data.md#uploads-by-digest), found among the plan's tenant's
   * uploads when the step runs; the process and docker tiers bind them in read-only.
   */
  files?: FileReference[]
  limits?: PlanStepLimits
}

/** What a caller submits. */
export interface PlanSpec {
  /** What the plan is for, in words; given to the reflector with the failure. */
  goal?: string
  steps: PlanStepSpec[]
  /** Revisions the reflector may make (refused ones count); at most `fabric.plans.maxRevisions`. */
  maxRevisions?: number
  /** Priority of every step's task (higher runs first). @default 0 */
  priority?: number
  /** @default 'batch' */
  lane?: TaskLane
  /**
   * Where each step's workspace lives: `memory` (a fresh one in the process running the step) or `s3` (a prefix of
   * its own in the bucket, `<fabric.s3.prefix>workspaces/plans/<planId>/<stepId>/v<version>/`, kept after the run).
   * @default `fabric.plans.workspaces`
   */
  workspace?: PlanWorkspaceKind
}

export const PLAN_WORKSPACE_KINDS = ['memory', 's3'] as const
export type PlanWorkspaceKind = (typeof PLAN_WORKSPACE_KINDS)[number]

/**
 * A plan's lifecycle: RUNNING while its steps run; REVISING from a step's failure until a revision is accepted (the
 * plan is paused: no step starts, running ones may finish); then RUNNING again, on the next version. It ends
 * COMPLETED (every step completed), FAILED (a step failed and no revision is left, or there is no reflector) or
 * TERMINATED (cancelled). SUSPENDED is a caller's pause of a RUNNING plan: no step starts, running ones are suspended,
 * until it is resumed (RUNNING again) or cancelled.
 */
export const PLAN_STATES = ['RUNNING', 'REVISING', 'SUSPENDED', 'COMPLETED', 'FAILED', 'TERMINATED'] as const
export type PlanState = (typeof PLAN_STATES)[number]

export function isPlanFinal(state: PlanState): boolean {
  return state === 'COMPLETED' || state === 'FAILED' || state === 'TERMINATED'
}

/** A step's task states after which its plan may have something to decide (a step's end, or its suspension). */
export function decidesPlan(state: TaskState): boolean {
  return state === 'COMPLETED' || state === 'FAILED' || state === 'TERMINATED' || state === 'SUSPENDED'
}

/** A step as one version of the plan holds it: its definition and the task that runs it (or ran it, when reused). */
export interface PlanStepRecord extends PlanStepSpec {
  taskId: string
  /** SHA-256 of what decides the step's outcome: language, code, dependencies and limits (not the description). */
  digest: string
  /** Present when this version keeps an earlier version's completed run instead of running the step again. */
  reusedFrom?: number
}

/** What a revision changed, step ids by kind, against the version before it. */
export interface PlanChanges {
  added: string[]
  removed: string[]
  /** Same id, another definition (code, language, dependencies or limits): it runs again. */
  changed: string[]
  /** Completed earlier with the same definition and the same inputs: its result is kept, it does not run again. */
  reused: string[]
}

export interface PlanVersion {
  version: number
  createdAt: string
  /** `submitted`, or why the revision was made: the failed step and its error. */
  reason: string
  /** The reflector's own explanation of the revision. */
  note?: string
  steps: PlanStepRecord[]
  /** Against the version before; absent on version 1. */
  changes?: PlanChanges
}

/** One answer of the reflector: accepted as a new version, or refused with the reason (both count against maxRevisions). */
export interface PlanRevision {
  attempt: number
  at: string
  /** The failed step the reflector was asked about. */
  stepId: string
  accepted: boolean
  /** The version it became, when accepted. */
  version?: number
  /** Why it was refused, or the reflector's note when accepted. */
  reason: string
}

/** A plan as stored. */
export interface Plan {
  id: string
  tenant: string
  /** The submitter's policy profile, used for every step. */
  profile?: string
  goal?: string
  state: PlanState
  /** The reason of the last plan transition: for FAILED, the step and its last error. */
  reason: string
  /** The version running now (the last one). */
  version: number
  maxRevisions: number
  priority: number
  lane: TaskLane
  /** `s3` when the steps' workspaces are in the bucket; absent for memory. */
  workspace?: 's3'
  versions: PlanVersion[]
  revisions: PlanRevision[]
  /** The step whose failure is being revised (REVISING) or that failed the plan (FAILED). */
  failedStep?: string
  /** The engine driving a revision (`host:pid#n`), so a restart knows which it must take over. */
  owner?: string
  /** Increases with every write: writes are compare-and-set on it, so two processes never both revise a plan. */
  rev: number
  createdAt: string
  updatedAt: string
}

/** A step of the current version with its state, from its task. */
export interface PlanStepView extends PlanStepRecord {
  /** The task's state; `PENDING` also while the task waits for its dependencies. */
  state: TaskState
  attempts: number
  /** The reason of the task's last transition. */
  reason: string
  result?: ExecutionResult
}

/** A plan as the interfaces answer it: the stored plan with its current steps and their states. */
export interface PlanView extends Omit<Plan, 'owner' | 'rev'> {
  steps: PlanStepView[]
}

/**
 * One entry of a plan's ordered event log: a plan transition, a step's transition (its task's, mirrored), or a
 * revision attempt. `seq` orders them and is the SSE event id.
 */
export type PlanEvent = { seq: number; planId: string; at: string; version: number } & (
  | { type: 'plan'; from: PlanState | null; to: PlanState; reason: string }
  | {
      type: 'step'
      stepId: string
      taskId: string
      from: TaskState | null
      to: TaskState
      reason: string
      attempt: number
      taskSeq: number
    }
  | { type: 'revision'; attempt: number; accepted: boolean; stepId: string; reason: string; changes?: PlanChanges }
)

/**
 * A rich output (an image, a table, a display() item) of a step's run, sent as it is made, or (to a reader that did not
 * hear it live) from the step's stored result (`outputs[index]`) just before the step's end: not in the plan's log
 * (no `seq`), so a reader that resumes with Last-Event-ID past the step's end does not see it again.
 */
export interface PlanOutputEvent {
  type: 'output'
  planId: string
  stepId: string
  taskId: string
  attempt: number
  index: number
  output: Output
}

/** What a plan's event stream yields: its log, and its steps' rich outputs as they are made. */
export type PlanStreamItem = PlanEvent | PlanOutputEvent

/** An event before the store numbers it. */
export type NewPlanEvent = PlanEvent extends infer E ? (E extends PlanEvent ? Omit<E, 'seq' | 'planId'> : never) : never

/** A step's task transition copied into the plan's log (step-log-mirror.ts), before the store numbers it. */
export type NewStepEvent = Extract<NewPlanEvent, { type: 'step' }>
