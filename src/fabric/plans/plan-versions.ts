import type { Plan, PlanVersion } from './plan-types'

/**
 * Where each version of a plan is recorded so that its steps' runs can point at it: the artifact ledger's
 * `queuePlanVersion` (docs/ledger.md), wired by src/app/fabric-wiring.ts where both are created. The plans layer knows only this
 * shape, never the ledger's implementation. Recording the same version twice must answer the first record.
 */
export type PlanVersionRecorder = (version: {
  tenant: string
  planId: string
  version: number
  previousVersion?: number
  document: PlanVersionDocument
  reason: string
}) => Promise<unknown>

/** A version as the ledger keeps it: what the plan was for and every step of that version, with the task that runs it. */
export interface PlanVersionDocument {
  planId: string
  version: number
  goal?: string
  reason: string
  note?: string
  changes?: PlanVersion['changes']
  steps: PlanVersion['steps']
}

/** The document of one version of a plan: the same for every process that records it, so a second record is the first. */
export function planVersionDocument(plan: Pick<Plan, 'id' | 'goal'>, version: PlanVersion): PlanVersionDocument {
  return {
    planId: plan.id,
    version: version.version,
    ...(plan.goal ? { goal: plan.goal } : {}),
    reason: version.reason,
    ...(version.note ? { note: version.note } : {}),
    ...(version.changes ? { changes: version.changes } : {}),
    steps: version.steps,
  }
}

/** What the recorder is given for one version of a plan. */
export function planVersionRecord(plan: Pick<Plan, 'id' | 'goal' | 'tenant'>, version: PlanVersion): Parameters<PlanVersionRecorder>[0] {
  return {
    tenant: plan.tenant,
    planId: plan.id,
    version: version.version,
    ...(version.version > 1 ? { previousVersion: version.version - 1 } : {}),
    document: planVersionDocument(plan, version),
    reason: version.reason,
  }
}
