import type { EgressRecord, ExecutionStatus, Lane, Language, NetworkAccess, FilesystemAccess, SecurityPolicy, Tier } from '../../core'

/**
 * The artifact ledger's data (docs/ledger.md). A record is one entry of a tenant's append-only, hash-chained log: a
 * run's provenance, or a plan version. Records hold digests, sizes, media types, limits and times, never code, output,
 * secrets or environment values; the bytes live in the blob store, addressed by their SHA-256.
 */

/** A stored artifact as a record names it: a file, the code, a stream or a value. */
export interface ArtifactRef {
  /** Workspace path of a file; for the code, streams and values, their role (`code`, `stdout`, `stderr`, `value`). */
  path: string
  /** Lower-case hex SHA-256 of the bytes. */
  sha256: string
  size: number
  mediaType: string
  /**
   * An upload the run named by digest (`PUT /v1/files`): its bytes are in the upload store, not the ledger's blobs, so
   * `GET /v1/files/:sha256` describes it and `GET /v1/artifacts/:sha256` does not serve it; lineage finds its runs.
   */
  upload?: true
}

/** A stream's digest; `stored` when it was at least `fabric.ledger.outputThresholdBytes` long and kept as an artifact. */
export interface StreamDigest {
  sha256: string
  size: number
  stored: boolean
}

/** The limits a run ran under, from its resolved policy (the policy's digest covers all of it). */
export interface RunLimits {
  wallTimeMs: number
  cpuTimeMs: number
  memoryMb: number
  outputBytes: number
  network: NetworkAccess
  filesystem: FilesystemAccess
  maxProcesses: number
  hostCalls: { maxCount: number; maxTotalMs: number }
}

/** One execution's provenance: who ran what, where, under which rules, with which inputs and outputs. */
export interface RunRecord {
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
  tier?: Tier
  execgateVersion: string
  /** The code, stored as an artifact (role `code`). */
  code: ArtifactRef
  /**
   * SHA-256 of the resolved policy's canonical JSON; absent when the request was refused before it was resolved. The
   * record store keeps that JSON once per digest (`LedgerRecordStore.policy`), not in every record.
   */
  policySha256?: string
  /**
   * The policy's limits. Stored in records written before policies were stored by digest; a read (the record, its
   * provenance, exports, receipts) fills them in from the stored policy for newer ones.
   */
  limits?: RunLimits
  /**
   * The resolved policy itself (its canonical JSON is what `policySha256` hashes), for the run's signed receipt. Like
   * `limits`: in older records as stored, filled in on read for newer ones; absent on records from before it was kept.
   */
  policy?: SecurityPolicy
  /** The egress gateway's log of the run's requests (`result.egress`), when it made any. */
  egress?: EgressRecord[]
  /** What ran the code besides execgate: the Node.js that hosted the run, and the adapter's engines where it names them. */
  engines?: Record<string, string>
  /** ISO 8601. */
  startedAt: string
  endedAt: string
  status: ExecutionStatus
  /** execgate's error code when execgate refused or failed the run, and the error's class (never its message). */
  error?: { type: string; code?: string }
  wallMs: number
  cpuMs?: number
  /** Peak memory, where the adapter reports it (`result.usage.memoryBytes`). */
  peakMemoryBytes?: number
  /** The request's files, then the workspace files it read without writing them first (a stable layer's, a session's). */
  inputs: ArtifactRef[]
  /** The files the run wrote (`result.files`). */
  outputs: ArtifactRef[]
  stdin?: { sha256: string; size: number }
  stdout: StreamDigest
  stderr: StreamDigest
  /**
   * SHA-256 of the value's JSON (`JSON.stringify(value)`: the bytes a dependent task reads as `deps/<id>/value.json`),
   * always stored as an artifact (role `value`).
   */
  value?: { sha256: string; size: number }
  /** The adapter routing moved off, and why (a fallback or a rerun on the full language is part of this run). */
  fallbackFrom?: { adapter: string; reason: string }
  /** The plan version's document this step ran under, when the plan engine recorded that version. */
  planDocument?: ArtifactRef
}

/** A plan version, recorded by the plan engine at merge time: its document, and the version it revises. */
export interface PlanVersionRecord {
  kind: 'plan_version'
  tenant: string
  planId: string
  version: number
  previousVersion?: number
  /** The plan document, stored as an artifact (`application/json`). */
  document: ArtifactRef
  /** The previous version's document, for `wasRevisionOf`. */
  previousDocument?: ArtifactRef
  /** Why the version exists: `submitted`, or the reflector's revision after a failed step. */
  reason?: string
  execgateVersion: string
  recordedAt: string
}

/**
 * A file a persistent sandbox saved to the ledger (`sb.saveArtifact`): the sandbox is the activity that generated
 * it, so lineage and `GET /v1/artifacts/:sha256` find it for the sandbox's tenant.
 */
export interface SandboxFileRecord {
  kind: 'sandbox_file'
  tenant: string
  sandboxId: string
  /** The sandbox's backend. */
  adapter: string
  /** The file, with its workspace path. */
  file: ArtifactRef
  /** The file is a snapshot of the sandbox's workspace (`sb.snapshot()`, a tar), not one of its files. */
  snapshot?: true
  execgateVersion: string
  recordedAt: string
}

export type LedgerEntry = RunRecord | PlanVersionRecord | SandboxFileRecord

/** A record as stored: its place in the tenant's chain and the hashes that link it. */
export interface StoredRecord {
  tenant: string
  /** Position in the tenant's chain: 1, 2, 3, … without gaps. */
  seq: number
  /** `runId` for runs, `plan:<planId>@<version>` for plan versions, `sandbox:<id>/<path>@<sha256>` for sandbox files. */
  id: string
  /** The exact JSON text that was hashed: `{seq, prevHash, recordedAt, entry}`. */
  body: string
  /** SHA-256 of `body`. */
  hash: string
}

/** The parsed body of a stored record. */
export interface RecordBody {
  seq: number
  /** The hash of the tenant's previous record (or of the retention checkpoint); '' for the first. */
  prevHash: string
  /** Epoch ms. */
  recordedAt: number
  entry: LedgerEntry
}

/** How an artifact takes part in a record: PROV's `used` (inputs, code, plan) or `wasGeneratedBy` (outputs). */
export type LinkRole = 'input' | 'code' | 'plan' | 'output' | 'stdout' | 'stderr' | 'value' | 'document'
export const USED_ROLES: readonly LinkRole[] = ['input', 'code', 'plan']
export const GENERATED_ROLES: readonly LinkRole[] = ['output', 'stdout', 'stderr', 'value', 'document']

/** One artifact a record references (only artifacts whose bytes are stored). */
export interface ArtifactLink {
  sha256: string
  role: LinkRole
  path: string
  size: number
  mediaType: string
}

/** A resolved policy as the record store keeps it, once per digest: its canonical JSON and that text's SHA-256. */
export interface PolicyText {
  sha256: string
  text: string
}

/** A record about to be appended; the store gives it its seq and hashes. */
export interface RecordDraft {
  tenant: string
  id: string
  /** Epoch ms. */
  recordedAt: number
  entry: LedgerEntry
  /**
   * Makes `entry`'s JSON (the writer's runEntryJson), called once when the store chains the draft; without it the
   * store serialises `entry`. A function, so each text is made inside the append, just before its row is written,
   * not for a whole batch at once before it: a batch's texts then never all live together (garbage collection).
   */
  entryJson?: () => string
}

/** The end of a tenant's chain, or the retention checkpoint where its kept part begins. */
export interface ChainPoint {
  seq: number
  hash: string
}

/** Who is asking: a tenant only ever sees its own records and, through them, its own artifacts. */
export interface LedgerCaller {
  /** @default 'local' (the library's and CLI's own tenant, as for tasks) */
  tenant?: string
}

export interface VerifyReport {
  tenant: string
  ok: boolean
  /** Records checked (those kept after retention). */
  records: number
  /** The chain's last record, whose hash an operator may keep elsewhere to anchor it. */
  head?: ChainPoint
  /** Where retention cut the chain: records before it were removed, their last hash kept. */
  checkpoint?: ChainPoint
  /** The first broken link, when there is one. */
  broken?: { seq: number; id?: string; reason: string }
}

export const EXPORT_FORMATS = ['prov-json', 'openlineage'] as const
export type ExportFormat = (typeof EXPORT_FORMATS)[number]

/** What `recordPlanVersion` takes (the plan engine calls it when it creates or merges a revision). */
export interface PlanVersionInput {
  tenant?: string
  planId: string
  /** 1 for the submitted plan, then one more for every revision. */
  version: number
  /** The version this one revises; absent for the first. */
  previousVersion?: number
  /** The plan as JSON (steps, dependencies, code): stored as the version's document. */
  document: unknown
  reason?: string
}

/** What `recordSandboxFile` takes (the SandboxManager calls it, through src/app/fabric-wiring.ts, for `saveArtifact`). */
export interface SandboxFileInput {
  tenant?: string
  sandboxId: string
  adapter: string
  /** The file's workspace path (normalised by the sandbox). */
  path: string
  content: Buffer
  /** A snapshot of the workspace rather than one of its files. */
  snapshot?: boolean
}
