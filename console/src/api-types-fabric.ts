/**
 * The answers of the fabric's routes the console reads: plans (docs/plans.md), the artifact ledger (docs/ledger.md)
 * and persistent sandboxes (docs/sandboxes.md). They mirror the routes' documented JSON, as any client's would; the
 * server's own types live in src/fabric/ (plan-types.ts, ledger/types.ts, ledger/lineage.ts, sandboxes/sandbox-types.ts).
 */
import type { EgressRecord, ExecutionResult, Language, Lane, TaskState } from './api-types'

export const PLAN_STATES = ['RUNNING', 'REVISING', 'SUSPENDED', 'COMPLETED', 'FAILED', 'TERMINATED'] as const
export type PlanState = (typeof PLAN_STATES)[number]

export interface PlanStepSpec {
  id: string
  description?: string
  language: Language
  code: string
  dependsOn?: string[]
  limits?: { timeoutMs?: number; memoryMb?: number; outputBytes?: number; maxAttempts?: number }
}

export interface PlanStepRecord extends PlanStepSpec {
  taskId: string
  digest: string
  reusedFrom?: number
}

export interface PlanChanges {
  added: string[]
  removed: string[]
  changed: string[]
  reused: string[]
}

export interface PlanVersion {
  version: number
  createdAt: string
  reason: string
  note?: string
  steps: PlanStepRecord[]
  changes?: PlanChanges
}

export interface PlanRevision {
  attempt: number
  at: string
  stepId: string
  accepted: boolean
  version?: number
  reason: string
}

export interface PlanStepView extends PlanStepRecord {
  state: TaskState
  attempts: number
  reason: string
  result?: ExecutionResult
}

/** GET /v1/plans/:id */
export interface Plan {
  id: string
  tenant: string
  goal?: string
  state: PlanState
  reason: string
  version: number
  maxRevisions: number
  priority: number
  lane: Lane
  versions: PlanVersion[]
  revisions: PlanRevision[]
  failedStep?: string
  steps: PlanStepView[]
  createdAt: string
  updatedAt: string
}

/** One plan of GET /v1/plans. */
export interface PlanSummary {
  id: string
  goal?: string
  state: PlanState
  reason: string
  version: number
  steps: number
  revisions: number
  maxRevisions: number
  failedStep?: string
  createdAt: string
  updatedAt: string
}

/** One event of GET /v1/plans/:id/events. */
export type PlanEvent = { seq: number; planId: string; at: string; version: number } & (
  | { type: 'plan'; from: PlanState | null; to: PlanState; reason: string }
  | { type: 'step'; stepId: string; taskId: string; from: TaskState | null; to: TaskState; reason: string; attempt: number }
  | { type: 'revision'; attempt: number; accepted: boolean; stepId: string; reason: string; changes?: PlanChanges }
)

/** An artifact as a ledger record names it. */
export interface ArtifactRef {
  path: string
  sha256: string
  size: number
  mediaType: string
}

/** GET /v1/runs/:id/record: the run's record and its place in the tenant's hash chain. */
export interface RunRecordAnswer {
  record: {
    kind: 'run'
    runId: string
    traceId: string
    tenant: string
    agentType?: string
    lane?: Lane
    taskId?: string
    attempt?: number
    planId?: string
    planVersion?: number
    stepId?: string
    language?: Language
    adapter: string
    tier?: number
    execgateVersion: string
    code: ArtifactRef
    policySha256?: string
    limits?: Record<string, unknown>
    startedAt: string
    endedAt: string
    status: string
    error?: { type: string; code?: string }
    wallMs: number
    cpuMs?: number
    peakMemoryBytes?: number
    inputs: ArtifactRef[]
    outputs: ArtifactRef[]
    stdin?: { sha256: string; size: number }
    stdout: { sha256: string; size: number; stored: boolean }
    stderr: { sha256: string; size: number; stored: boolean }
    value?: { sha256: string; size: number }
    fallbackFrom?: { adapter: string; reason: string }
    planDocument?: ArtifactRef
    /** The egress gateway's log of the run's requests, when it made any (docs/network.md). */
    egress?: EgressRecord[]
  }
  seq: number
  hash: string
  prevHash: string
}

/** A run, a plan version or a file saved from a sandbox in a lineage answer. */
export interface LineageActivity {
  id: string
  kind: 'run' | 'plan_version' | 'sandbox_file'
  sandboxId?: string
  taskId?: string
  attempt?: number
  planId?: string
  planVersion?: number
  stepId?: string
  adapter?: string
  language?: string
  status?: string
  startedAt?: string
  codeSha256?: string
}

export interface LineageEntity {
  sha256: string
  size: number
  mediaType: string
  paths: string[]
}

export interface LineageRelation {
  relation: 'used' | 'wasGeneratedBy'
  activity: string
  entity: string
  role: string
}

export interface LineageGraph {
  activities: LineageActivity[]
  entities: LineageEntity[]
  relations: LineageRelation[]
}

/** GET /v1/artifacts/:sha256/lineage */
export interface Lineage {
  artifact: LineageEntity
  ancestors: LineageGraph
  descendants: LineageGraph
  truncated: boolean
}

/** GET /v1/sandboxes/:id, and each of GET /v1/sandboxes. */
export interface SandboxInfo {
  id: string
  tenant: string
  adapter: string
  languages: Language[]
  createdAt: string
  lastUsedAt: string
  expiresAt: string
  idleTimeoutMs: number
  execs: number
  policy: Record<string, unknown>
  lastSnapshot?: SandboxSnapshot
}

/** POST /v1/sandboxes/:id/snapshots: the workspace as a tar in the ledger, restored by POST /v1/sandboxes { from }. */
export interface SandboxSnapshot {
  id: string
  sandboxId: string
  adapter: string
  files: number
  bytes: number
  createdAt: string
  reason: 'requested' | 'stop' | 'idle'
}
