import type { DsseEnvelope } from './receipts/dsse'
import type { LedgerPublicKey } from './receipts/receipt-issuer'
import type { ArtifactContent, ExportOptions, RunProvenanceRecord } from './ledger-queries'
import type { Lineage, LineageLimits } from './lineage'
import type { OpenLineageRunEvent } from './openlineage'
import type { ProvDocument } from './prov-json'
import type { RetentionPolicy, RetentionReport } from './retention'
import type { ArtifactRef, ExportFormat, LedgerCaller, PlanVersionInput, SandboxFileInput, VerifyReport } from './types'

/** The ledger's queue, for metrics (`execgate_ledger_*`) and for an operator. */
export interface LedgerStats {
  /** Records heard and not yet written. */
  queued: number
  /** Records written since start. */
  written: number
  /** Records lost since start: the queue was full (the writer fell behind, or the store was down), or the writer thread died. */
  lost: number
  queueLimit: number
}

/** What `execgate.ledger` offers (docs/ledger.md). Every query is the caller's tenant's; another's answers 404. */
export interface LedgerService {
  /** The run's provenance as a W3C PROV-JSON document. */
  provenance(runId: string, caller?: LedgerCaller): Promise<ProvDocument>
  /** The run's record as stored, with its place in the chain. */
  record(runId: string, caller?: LedgerCaller): Promise<RunProvenanceRecord>
  lineage(sha256: string, caller?: LedgerCaller, limits?: LineageLimits): Promise<Lineage>
  artifact(sha256: string, caller?: LedgerCaller): Promise<ArtifactContent>
  verify(caller?: LedgerCaller): Promise<VerifyReport>
  export(format: 'prov-json', caller?: LedgerCaller, options?: ExportOptions): Promise<ProvDocument>
  export(format: 'openlineage', caller?: LedgerCaller, options?: ExportOptions): Promise<OpenLineageRunEvent[]>
  export(format: ExportFormat, caller?: LedgerCaller, options?: ExportOptions): Promise<ProvDocument | OpenLineageRunEvent[]>
  /** The run's signed receipt: an in-toto Statement in a DSSE envelope, signed with the server's Ed25519 key. */
  receipt(runId: string, caller?: LedgerCaller): Promise<DsseEnvelope>
  /** A plan's signed receipt, covering its steps' run receipts by digest and its versions' documents. */
  planReceipt(planId: string, caller?: LedgerCaller): Promise<DsseEnvelope>
  /** The public key receipts verify with. */
  publicKey(): Promise<LedgerPublicKey>
  /** Records a plan version, links it to the one it revises, and answers once it is written. */
  recordPlanVersion(input: PlanVersionInput): Promise<{ id: string; seq: number; document: ArtifactRef }>
  /**
   * For the plan engine, before a version's steps run: queues the version ahead of their runs, written in the same
   * batch as they are (a commit of its own cost a plan ~2 ms end to end, benchmarks.md); a repeat is written once.
   */
  queuePlanVersion(input: PlanVersionInput): Promise<void>
  /** For persistent sandboxes (`saveArtifact`): stores a file's bytes and records that the sandbox generated them. */
  recordSandboxFile(input: SandboxFileInput): Promise<{ id: string; seq: number; file: ArtifactRef }>
  /** Every tenant with records: for an operator (`execgate ledger verify --all`), never for a tenant's own callers. */
  tenants(): Promise<string[]>
  /** Applies the retention policy now (every tenant, or the caller's). */
  applyRetention(options?: { tenant?: string; policy?: RetentionPolicy; now?: number }): Promise<RetentionReport>
  /** Resolves once every run heard so far is written (queries do this first). */
  flush(): Promise<void>
  /** The write queue's depth, and what was written and lost (absent on a ledger switched off). */
  stats?(): LedgerStats
  close(): Promise<void>
}
