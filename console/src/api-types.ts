/**
 * The shapes of the public API's answers the console reads (docs/api.md, docs/tasks.md). The execution contract's
 * types come from src/core/types.ts itself (it imports nothing, so the browser bundle takes it as is); the others
 * mirror their routes' documented JSON, as any client of the API would.
 */
export type {
  EgressRecord,
  ExecutionRequest,
  ExecutionResult,
  ExecutionStatus,
  Language,
  ValidationReport,
  ValidationIssue,
  Enforcement,
  PolicyLimit,
  Tier,
  HealthState,
} from '../../src/core/types'
import type {
  Enforcement,
  ExecutionRequest,
  ExecutionResult,
  ExecutionStatus,
  HealthState,
  Language,
  PolicyLimit,
  Tier,
} from '../../src/core/types'

export type Lane = 'interactive' | 'batch'

/** GET /v1/adapters */
export interface ExecgateStatus {
  active: string
  lastSwitch?: { from?: string; to?: string; reason: string; at: string }
  warmedUp: boolean
  adapters: {
    name: string
    tier: Tier
    languages: Language[]
    health: {
      state: HealthState | 'unknown'
      reason?: string
      latencyMs?: number
      checkedAt?: string
      failuresInARow: number
      successesInARow: number
    }
    breaker: 'closed' | 'open' | 'half-open'
    warm?: boolean
    /** Present on adapters that can host persistent sandboxes. */
    sandboxes?: true
  }[]
  admission: {
    inProcessBatch: { limit: number; inUse: number }
    adapters: { adapter: string; slots: number | null; reserved: number; inUse: Record<Lane, number>; queued: Record<Lane, number> }[]
  }
  /** This node's id in the fabric's sandbox registry. */
  node?: string
  /** Every live node, as its heartbeat in the registry says (one with the embedded store). */
  nodes?: FabricNode[]
}

/** A node of the fabric (GET /v1/adapters's `nodes`). */
export interface FabricNode {
  id: string
  url?: string
  startedAt: string
  heartbeatAt: string
  status?: {
    adapters?: { name: string; tier: Tier; health: HealthState | 'unknown' }[]
    admission?: ExecgateStatus['admission']
    sandboxes?: number
  }
}

/** GET /v1/adapters/:name/policy */
export interface PolicyExplanation {
  profile: string | null
  adapter: string
  usable: boolean
  rows: { limit: PolicyLimit; setting: string; enforcement: Enforcement; required: boolean; satisfied: boolean }[]
}

/** GET /v1/readiness/events */
export type ReadinessEvent =
  | { type: 'health'; adapter: string; from: HealthState | 'unknown'; to: HealthState | 'unknown'; reason?: string; at: string }
  | { type: 'switch'; from: string; to: string; reason: string; at: string }

/** GET /v1/activity */
export interface ActivitySummary {
  capacity: number
  fromMs: number
  nowMs: number
  bucketMs: number
  knownSinceMs?: number
  /** `deployment`: every node's runs (the shared store); `node`: this server's alone. */
  scope?: 'deployment' | 'node'
  /** The nodes whose runs are in the window (on the shared store). */
  nodes?: string[]
  total: number
  statuses: Partial<Record<ExecutionStatus, number>>
  buckets: { startMs: number; count: number; statuses: Partial<Record<ExecutionStatus, number>> }[]
  series: {
    adapter: string
    lane: string
    count: number
    p50Ms: number
    p95Ms: number
    points: { startMs: number; count: number; p50Ms: number; p95Ms: number }[]
  }[]
}

export const TASK_STATES = ['PENDING', 'SPAWNING', 'RUNNING', 'SUSPENDED', 'COMPLETED', 'FAILED', 'TERMINATED'] as const
export type TaskState = (typeof TASK_STATES)[number]

/** GET /v1/tasks/:id */
export interface Task {
  id: string
  tenant: string
  state: TaskState
  request: ExecutionRequest
  intentId?: string
  priority: number
  deadline?: string
  dependencies: string[]
  timeoutMs?: number
  lane: Lane
  attempts: number
  ready: boolean
  reason: string
  result?: ExecutionResult
  createdAt: string
  updatedAt: string
}

/** One entry of a task's action log (`event: transition` of GET /v1/tasks/:id/events). */
export interface TaskEvent {
  seq: number
  taskId: string
  at: string
  from: TaskState | null
  to: TaskState
  reason: string
  attempt: number
}
