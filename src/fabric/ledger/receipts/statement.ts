import { canonicalJson, sha256 } from '../digest'
import type { ArtifactRef, PlanVersionRecord, RunRecord, StreamDigest } from '../types'

/**
 * The in-toto Statements (github.com/in-toto/attestation, spec v1) execgate signs: one per run, one per plan. The
 * payload is the statement's canonical JSON (sorted keys, no spaces), so the same record always gives the same bytes
 * and a plan's receipt can name its steps' receipts by digest.
 */

export const IN_TOTO_STATEMENT_TYPE = 'https://in-toto.io/Statement/v1'
export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json'
/** execgate's predicate types: names, never fetched. */
export const RUN_PREDICATE_TYPE = 'https://execgate.dev/receipt/run/v1'
export const PLAN_PREDICATE_TYPE = 'https://execgate.dev/receipt/plan/v1'

/** An in-toto ResourceDescriptor as execgate fills it. */
export interface ResourceDescriptor {
  name: string
  digest: { sha256: string }
  mediaType?: string
  annotations?: Record<string, string | number | boolean>
}

export interface Statement<P> {
  _type: typeof IN_TOTO_STATEMENT_TYPE
  subject: ResourceDescriptor[]
  predicateType: string
  predicate: P
}

/** Where the record sits in its tenant's hash chain: the receipt is bound to that exact record. */
export interface ChainPlace {
  seq: number
  hash: string
  prevHash: string
}

export interface RunPredicate {
  runId: string
  traceId: string
  tenant: string
  status: RunRecord['status']
  error?: RunRecord['error']
  adapter: string
  tier?: number
  language?: string
  code: { sha256: string; size: number; mediaType: string }
  /** `sha256` of the resolved policy's canonical JSON; `resolved` is that policy (records from before it was kept: `limits` only). */
  policy?: { sha256: string; resolved?: unknown; limits?: unknown }
  /** The egress gateway's log; an empty list when the run made no request. */
  egress: unknown[]
  engines: Record<string, string>
  startedAt: string
  endedAt: string
  wallMs: number
  cpuMs?: number
  inputs: { path: string; sha256: string; size: number; mediaType: string }[]
  stdin?: { sha256: string; size: number }
  agentType?: string
  lane?: string
  taskId?: string
  attempt?: number
  planId?: string
  planVersion?: number
  stepId?: string
  planDocument?: { sha256: string; size: number }
  fallbackFrom?: { adapter: string; reason: string }
  ledger: ChainPlace
}

const file = (ref: ArtifactRef) => ({ path: ref.path, sha256: ref.sha256, size: ref.size, mediaType: ref.mediaType })

function streamSubject(name: 'stdout' | 'stderr', digest: StreamDigest): ResourceDescriptor {
  return {
    name,
    digest: { sha256: digest.sha256 },
    mediaType: 'text/plain; charset=utf-8',
    annotations: { size: digest.size, stored: digest.stored },
  }
}

/** Subjects: what the run produced, by digest. Files as `files/<workspace path>`, then `stdout`, `stderr`, `value`. */
function runSubjects(record: RunRecord): ResourceDescriptor[] {
  return [
    ...record.outputs.map((ref) => ({
      name: `files/${ref.path}`,
      digest: { sha256: ref.sha256 },
      mediaType: ref.mediaType,
      annotations: { size: ref.size },
    })),
    streamSubject('stdout', record.stdout),
    streamSubject('stderr', record.stderr),
    ...(record.value
      ? [
          {
            name: 'value',
            digest: { sha256: record.value.sha256 },
            mediaType: 'application/json',
            annotations: { size: record.value.size },
          },
        ]
      : []),
  ]
}

export function runStatement(record: RunRecord, place: ChainPlace): Statement<RunPredicate> {
  const predicate: RunPredicate = {
    runId: record.runId,
    traceId: record.traceId,
    tenant: record.tenant,
    status: record.status,
    ...(record.error ? { error: record.error } : {}),
    adapter: record.adapter,
    ...(record.tier !== undefined ? { tier: record.tier } : {}),
    ...(record.language ? { language: record.language } : {}),
    code: { sha256: record.code.sha256, size: record.code.size, mediaType: record.code.mediaType },
    ...(record.policySha256
      ? {
          policy: {
            sha256: record.policySha256,
            ...(record.policy ? { resolved: record.policy } : {}),
            ...(record.limits ? { limits: record.limits } : {}),
          },
        }
      : {}),
    egress: record.egress ?? [],
    engines: { execgate: record.execgateVersion, ...record.engines },
    startedAt: record.startedAt,
    endedAt: record.endedAt,
    wallMs: record.wallMs,
    ...(record.cpuMs !== undefined ? { cpuMs: record.cpuMs } : {}),
    inputs: record.inputs.map(file),
    ...(record.stdin ? { stdin: record.stdin } : {}),
    ...(record.agentType !== undefined ? { agentType: record.agentType } : {}),
    ...(record.lane ? { lane: record.lane } : {}),
    ...(record.taskId !== undefined ? { taskId: record.taskId } : {}),
    ...(record.attempt !== undefined ? { attempt: record.attempt } : {}),
    ...(record.planId !== undefined ? { planId: record.planId } : {}),
    ...(record.planVersion !== undefined ? { planVersion: record.planVersion } : {}),
    ...(record.stepId !== undefined ? { stepId: record.stepId } : {}),
    ...(record.planDocument ? { planDocument: { sha256: record.planDocument.sha256, size: record.planDocument.size } } : {}),
    ...(record.fallbackFrom ? { fallbackFrom: record.fallbackFrom } : {}),
    ledger: place,
  }
  return { _type: IN_TOTO_STATEMENT_TYPE, subject: runSubjects(record), predicateType: RUN_PREDICATE_TYPE, predicate }
}

/** A plan step's run as the plan's receipt names it; `receiptSha256` is the SHA-256 of that run's receipt payload. */
export interface PlanStepEntry {
  runId: string
  stepId?: string
  planVersion?: number
  taskId?: string
  attempt?: number
  status: string
  receiptSha256: string
}

export interface PlanPredicate {
  planId: string
  tenant: string
  versions: {
    version: number
    previousVersion?: number
    reason?: string
    recordedAt: string
    document: { sha256: string; size: number }
    ledger: ChainPlace
  }[]
  steps: PlanStepEntry[]
}

/**
 * A plan's statement: its subjects are its steps' run receipts (by the digest of each receipt's payload, the signed
 * bytes) and its versions' documents; the predicate says which step and attempt each receipt is.
 */
export function planStatement(
  planId: string,
  tenant: string,
  versions: readonly { record: PlanVersionRecord; place: ChainPlace }[],
  steps: readonly PlanStepEntry[],
): Statement<PlanPredicate> {
  const subject: ResourceDescriptor[] = [
    ...versions.map(({ record }) => ({
      name: `plan/v${record.version}.json`,
      digest: { sha256: record.document.sha256 },
      mediaType: record.document.mediaType,
      annotations: { size: record.document.size },
    })),
    ...steps.map((step) => ({
      name: `receipts/${step.runId}`,
      digest: { sha256: step.receiptSha256 },
      mediaType: IN_TOTO_PAYLOAD_TYPE,
      ...(step.stepId ? { annotations: { stepId: step.stepId } } : {}),
    })),
  ]
  const predicate: PlanPredicate = {
    planId,
    tenant,
    versions: versions.map(({ record, place }) => ({
      version: record.version,
      ...(record.previousVersion !== undefined ? { previousVersion: record.previousVersion } : {}),
      ...(record.reason ? { reason: record.reason } : {}),
      recordedAt: record.recordedAt,
      document: { sha256: record.document.sha256, size: record.document.size },
      ledger: place,
    })),
    steps: [...steps],
  }
  return { _type: IN_TOTO_STATEMENT_TYPE, subject, predicateType: PLAN_PREDICATE_TYPE, predicate }
}

/** The bytes a statement is signed as: its canonical JSON. */
export function statementBytes(statement: Statement<unknown>): Buffer {
  return Buffer.from(canonicalJson(statement))
}

export const payloadDigest = (payload: Buffer): string => sha256(payload)
