import { ExecgateError, describeError, type ExecutionListener, type ExecutionListenerContext, type ExecutionRequest, type ExecutionResult, type RunInfo } from '../../core'
import type { Logger } from '../../observability/logger'
import type { BlobStore } from './blob-store'
import { parseBody, verifyChain } from './chain'
import { planVersionId, sandboxFileId } from './entry-links'
import { traceLineage, type Lineage, type LineageLimits } from './lineage'
import { LedgerQueries, type ArtifactContent, type ExportOptions, type RunProvenanceRecord } from './ledger-queries'
import type { ProvDocument } from './prov-json'
import type { OpenLineageRunEvent } from './openlineage'
import type { LedgerRecordStore } from './record-store'
import { applyRetention, type RetentionPolicy, type RetentionReport } from './retention'
import { canonicalJson, captureRun, describeRun, sha256, type BlobWrite, type CapturedRun } from './run-capture'
import { JSON_MEDIA_TYPE, mediaTypeOf } from './media-types'
import type { DsseEnvelope } from './receipts/dsse'
import { ReceiptIssuer, type LedgerPublicKey } from './receipts/receipt-issuer'
import type { SigningKey } from './receipts/signing-key'
import type { ArtifactRef, ExportFormat, LedgerCaller, PlanVersionInput, PlanVersionRecord, RecordDraft, SandboxFileInput, SandboxFileRecord, VerifyReport } from './types'

export const DEFAULT_TENANT = 'local'

export interface ArtifactLedgerOptions {
  /** Opened at first use, so an execgate that never runs anything never opens a file or a connection. */
  openRecords: () => LedgerRecordStore
  openBlobs: () => BlobStore
  execgateVersion: string
  /** stdout/stderr at least this long are stored as artifacts. @default 1024 */
  outputThresholdBytes?: number
  retention?: RetentionPolicy & { intervalMinutes: number }
  logger?: Logger
  /** The receipt-signing key, loaded (or generated) at the first receipt; without it receipts are refused. */
  signingKey?: () => SigningKey
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
  close(): Promise<void>
}

type Pending =
  | { kind: 'run'; captured: CapturedRun }
  | { kind: 'plan'; tenant: string; entry: Omit<PlanVersionRecord, 'previousDocument'>; bytes: Buffer }
  | { kind: 'sandbox_file'; entry: SandboxFileRecord; bytes: Buffer }

/** Runs heard but not yet written are kept for another try when the store fails; past this many the oldest go. */
const MAX_PENDING = 10_000
const BATCH = 500
const KNOWN_BLOBS = 10_000
const RETRY_MS = 1000
const FLUSH_DELAY_MS = 20

/**
 * The artifact ledger: an `ExecutionListener` that records every run's provenance, and the queries over it.
 *
 * On the result's path it only copies what it needs (`captureRun`) and queues it; hashing, blob writes and the
 * record append run within FLUSH_DELAY_MS, batched, in order, one batch at a time (`flush`). Blobs are written
 * before the records that reference them, so a record never names bytes that are not stored. `close` flushes: what
 * was heard before dispose is on disk after it. A process killed outright loses what it heard in its last few ms.
 */
export class ArtifactLedger implements ExecutionListener, LedgerService {
  private pending: Pending[] = []
  private writing: Promise<void> = Promise.resolve()
  private scheduled = false
  private retry: NodeJS.Timeout | undefined
  private retentionTimer: NodeJS.Timeout | undefined
  private stores: { records: LedgerRecordStore; blobs: BlobStore } | undefined
  private readonly knownBlobs = new Set<string>()
  private readonly planDocuments = new Map<string, ArtifactRef>()
  private readonly queries: LedgerQueries
  private readonly receipts: ReceiptIssuer
  private signingKey: SigningKey | undefined
  private closed = false

  constructor(private readonly options: ArtifactLedgerOptions) {
    this.queries = new LedgerQueries(() => this.open())
    this.receipts = new ReceiptIssuer(
      () => this.open().records,
      (runId, tenant) => this.queries.record(runId, tenant),
      () => (this.signingKey ??= this.loadSigningKey()),
    )
    const retention = options.retention
    if (retention && retention.intervalMinutes > 0 && (retention.maxAgeDays > 0 || retention.maxBytesPerTenant > 0)) {
      this.retentionTimer = setInterval(() => {
        this.applyRetention().catch((error) => this.options.logger?.error({ err: describeError(error) }, 'ledger retention failed'))
      }, retention.intervalMinutes * 60_000)
      this.retentionTimer.unref()
    }
  }

  private loadSigningKey(): SigningKey {
    if (!this.options.signingKey) throw new ExecgateError('EXECGATE_CONFIG_INVALID', { detail: 'this ledger has no receipt-signing key (fabric.ledger.signing.key)' })
    return this.options.signingKey()
  }

  private open(): { records: LedgerRecordStore; blobs: BlobStore } {
    this.stores ??= { records: this.options.openRecords(), blobs: this.options.openBlobs() }
    return this.stores
  }

  onResult(result: ExecutionResult, request: ExecutionRequest, context?: ExecutionListenerContext | RunInfo): void {
    // Only the ExecutionService's calls carry a run id; a listener called by hand without one has nothing to record.
    const run = context && 'runId' in context ? context : undefined
    if (this.closed || !run) return
    this.pending.push({ kind: 'run', captured: captureRun(result, request, run) })
    this.schedule()
  }

  private schedule(): void {
    // A full batch is written at once; otherwise within FLUSH_DELAY_MS.
    if (this.pending.length === BATCH) void this.flush().catch(() => undefined)
    if (this.scheduled) return
    this.scheduled = true
    // The wait gathers the runs of that window into one transaction: a commit costs more than the records in it
    // (measured, a commit per run cost a quickjs run ~370 µs in all, a commit per 20 ms ~100 µs: benchmarks.md).
    // Not unref'd: a process that ends without dispose still writes what it heard.
    setTimeout(() => {
      this.scheduled = false
      this.flush().catch(() => undefined)
    }, FLUSH_DELAY_MS)
  }

  flush(): Promise<void> {
    const done = this.writing.then(() => this.writePending())
    this.writing = done.catch(() => undefined)
    return done
  }

  private async writePending(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, BATCH)
      try {
        await this.writeBatch(batch)
      } catch (error) {
        this.pending.unshift(...batch)
        const dropped = this.pending.length > MAX_PENDING ? this.pending.splice(0, this.pending.length - MAX_PENDING).length : 0
        this.options.logger?.error({ err: describeError(error), pending: this.pending.length, dropped }, 'ledger write failed; will try again')
        if (!this.closed && !this.retry) {
          this.retry = setTimeout(() => {
            this.retry = undefined
            this.flush().catch(() => undefined)
          }, RETRY_MS)
          this.retry.unref()
        }
        throw new ExecgateError('EXECGATE_LEDGER_UNAVAILABLE', { detail: describeError(error) }, { cause: error })
      }
    }
  }

  private async writeBatch(batch: readonly Pending[]): Promise<void> {
    const { records, blobs } = this.open()
    const drafts: RecordDraft[] = []
    const writes = new Map<string, BlobWrite>()
    for (const item of batch) {
      if (item.kind === 'sandbox_file') {
        const { file } = item.entry
        writes.set(file.sha256, { sha256: file.sha256, bytes: item.bytes, mediaType: file.mediaType })
        drafts.push({ tenant: item.entry.tenant, id: sandboxFileId(item.entry.sandboxId, file.path, file.sha256), recordedAt: Date.now(), entry: item.entry })
        continue
      }
      if (item.kind === 'plan') {
        const { entry } = item
        const previous = entry.previousVersion !== undefined ? await this.planDocument(item.tenant, entry.planId, entry.previousVersion) : undefined
        this.planDocuments.set(`${item.tenant}\n${planVersionId(entry.planId, entry.version)}`, entry.document)
        writes.set(entry.document.sha256, { sha256: entry.document.sha256, bytes: item.bytes, mediaType: JSON_MEDIA_TYPE })
        drafts.push({ tenant: item.tenant, id: planVersionId(entry.planId, entry.version), recordedAt: Date.now(), entry: { ...entry, ...(previous ? { previousDocument: previous } : {}) } })
        continue
      }
      const tenant = item.captured.run.tenant ?? DEFAULT_TENANT
      const { entry, blobs: runBlobs } = describeRun(item.captured, { tenant, execgateVersion: this.options.execgateVersion, outputThresholdBytes: this.options.outputThresholdBytes ?? 1024 })
      if (entry.planId !== undefined && entry.planVersion !== undefined) {
        const document = await this.planDocument(tenant, entry.planId, entry.planVersion)
        if (document) entry.planDocument = document
      }
      for (const blob of runBlobs) writes.set(blob.sha256, blob)
      drafts.push({ tenant, id: entry.runId, recordedAt: Date.now(), entry })
    }
    for (const blob of writes.values()) {
      if (this.knownBlobs.has(blob.sha256)) continue
      await blobs.put(blob.sha256, blob.bytes, blob.mediaType)
      if (this.knownBlobs.size >= KNOWN_BLOBS) this.knownBlobs.clear()
      this.knownBlobs.add(blob.sha256)
    }
    await records.append(drafts)
  }

  /** The document of a recorded plan version (this batch's included), for the runs of its steps and its successor. */
  private async planDocument(tenant: string, planId: string, version: number): Promise<ArtifactRef | undefined> {
    const key = `${tenant}\n${planVersionId(planId, version)}`
    const cached = this.planDocuments.get(key)
    if (cached) return cached
    const record = await this.open().records.byId(tenant, planVersionId(planId, version))
    const entry = record ? parseBody(record).entry : undefined
    if (entry?.kind !== 'plan_version') return undefined
    if (this.planDocuments.size >= 1000) this.planDocuments.delete(this.planDocuments.keys().next().value!)
    this.planDocuments.set(key, entry.document)
    return entry.document
  }

  async queuePlanVersion(input: PlanVersionInput): Promise<void> {
    if (this.closed) throw new ExecgateError('EXECGATE_LEDGER_UNAVAILABLE', { detail: 'the ledger is closed' })
    this.pending.push(this.planVersionItem(input))
    this.schedule()
  }

  async recordPlanVersion(input: PlanVersionInput): Promise<{ id: string; seq: number; document: ArtifactRef }> {
    const item = this.planVersionItem(input)
    this.pending.push(item)
    await this.flush()
    // Recorded before (a retry of the merge)? The first record stands, and is what is answered.
    const stored = await this.open().records.byId(item.tenant, planVersionId(input.planId, input.version))
    const recorded = stored ? parseBody(stored).entry : undefined
    return { id: planVersionId(input.planId, input.version), seq: stored?.seq ?? 0, document: recorded?.kind === 'plan_version' ? recorded.document : item.entry.document }
  }

  private planVersionItem(input: PlanVersionInput): Extract<Pending, { kind: 'plan' }> {
    if (typeof input?.planId !== 'string' || !input.planId || !Number.isInteger(input.version) || input.version < 1) {
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'a plan version needs a planId and a version of 1 or more' })
    }
    const tenant = input.tenant ?? DEFAULT_TENANT
    const bytes = Buffer.from(canonicalJson(input.document ?? null))
    const document: ArtifactRef = { path: `plan-${input.planId}-v${input.version}.json`, sha256: sha256(bytes), size: bytes.length, mediaType: JSON_MEDIA_TYPE }
    const entry: Omit<PlanVersionRecord, 'previousDocument'> = {
      kind: 'plan_version',
      tenant,
      planId: input.planId,
      version: input.version,
      ...(input.previousVersion !== undefined ? { previousVersion: input.previousVersion } : {}),
      document,
      ...(input.reason ? { reason: input.reason } : {}),
      execgateVersion: this.options.execgateVersion,
      recordedAt: new Date().toISOString(),
    }
    return { kind: 'plan', tenant, entry, bytes }
  }

  async recordSandboxFile(input: SandboxFileInput): Promise<{ id: string; seq: number; file: ArtifactRef }> {
    if (typeof input?.sandboxId !== 'string' || !input.sandboxId || typeof input.path !== 'string' || !input.path || !Buffer.isBuffer(input.content)) {
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'a sandbox file needs a sandboxId, a path and its content' })
    }
    const tenant = input.tenant ?? DEFAULT_TENANT
    const file: ArtifactRef = { path: input.path, sha256: sha256(input.content), size: input.content.length, mediaType: mediaTypeOf(input.path) }
    const entry: SandboxFileRecord = { kind: 'sandbox_file', tenant, sandboxId: input.sandboxId, adapter: input.adapter, file, execgateVersion: this.options.execgateVersion, recordedAt: new Date().toISOString() }
    this.pending.push({ kind: 'sandbox_file', entry, bytes: input.content })
    // Written before it answers: the caller may name the digest (a sandbox's files, GET /v1/artifacts) at once.
    await this.flush()
    const id = sandboxFileId(input.sandboxId, file.path, file.sha256)
    const stored = await this.open().records.byId(tenant, id)
    return { id, seq: stored?.seq ?? 0, file }
  }

  async provenance(runId: string, caller: LedgerCaller = {}): Promise<ProvDocument> {
    await this.flush()
    return this.queries.provenance(runId, caller.tenant ?? DEFAULT_TENANT)
  }

  async record(runId: string, caller: LedgerCaller = {}): Promise<RunProvenanceRecord> {
    await this.flush()
    return this.queries.record(runId, caller.tenant ?? DEFAULT_TENANT)
  }

  async receipt(runId: string, caller: LedgerCaller = {}): Promise<DsseEnvelope> {
    await this.flush()
    return this.receipts.run(runId, caller.tenant ?? DEFAULT_TENANT)
  }

  async planReceipt(planId: string, caller: LedgerCaller = {}): Promise<DsseEnvelope> {
    await this.flush()
    return this.receipts.plan(planId, caller.tenant ?? DEFAULT_TENANT)
  }

  async publicKey(): Promise<LedgerPublicKey> {
    return this.receipts.publicKey()
  }

  async lineage(sha: string, caller: LedgerCaller = {}, limits?: LineageLimits): Promise<Lineage> {
    await this.flush()
    const tenant = caller.tenant ?? DEFAULT_TENANT
    const found = await traceLineage(this.open().records, tenant, LedgerQueries.digest(sha), limits)
    if (!found) throw LedgerQueries.missingArtifact(sha, tenant)
    return found
  }

  async artifact(sha: string, caller: LedgerCaller = {}): Promise<ArtifactContent> {
    await this.flush()
    return this.queries.artifact(sha, caller.tenant ?? DEFAULT_TENANT)
  }

  async verify(caller: LedgerCaller = {}): Promise<VerifyReport> {
    await this.flush()
    const tenant = caller.tenant ?? DEFAULT_TENANT
    const { records } = this.open()
    const [head, checkpoint] = await Promise.all([records.head(tenant), records.checkpoint(tenant)])
    return verifyChain({ tenant, ...(head ? { head } : {}), ...(checkpoint ? { checkpoint } : {}), page: (after, limit) => records.page(tenant, after, limit) })
  }

  async tenants(): Promise<string[]> {
    await this.flush()
    return this.open().records.tenants()
  }

  export(format: 'prov-json', caller?: LedgerCaller, options?: ExportOptions): Promise<ProvDocument>
  export(format: 'openlineage', caller?: LedgerCaller, options?: ExportOptions): Promise<OpenLineageRunEvent[]>
  export(format: ExportFormat, caller?: LedgerCaller, options?: ExportOptions): Promise<ProvDocument | OpenLineageRunEvent[]>
  async export(format: ExportFormat, caller: LedgerCaller = {}, options: ExportOptions = {}): Promise<ProvDocument | OpenLineageRunEvent[]> {
    await this.flush()
    return this.queries.export(format, caller.tenant ?? DEFAULT_TENANT, options)
  }

  async applyRetention(options: { tenant?: string; policy?: RetentionPolicy; now?: number } = {}): Promise<RetentionReport> {
    const policy = options.policy ?? this.options.retention ?? { maxAgeDays: 0, maxBytesPerTenant: 0 }
    // On the write queue: no append (nor its blob writes) runs between the reference check and the delete.
    const run = this.writing.then(async () => {
      await this.writePending()
      const { records, blobs } = this.open()
      const report = await applyRetention(records, blobs, policy, options.now, options.tenant ? [options.tenant] : undefined)
      for (const sha of report.removedBlobs) this.knownBlobs.delete(sha)
      return report
    })
    this.writing = run.then(
      () => undefined,
      () => undefined,
    )
    return run
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearInterval(this.retentionTimer)
    clearTimeout(this.retry)
    await this.flush().catch((error) => this.options.logger?.error({ err: describeError(error), lost: this.pending.length }, 'ledger records could not be written before close'))
    await this.stores?.records.close()
  }
}
