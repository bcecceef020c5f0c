import {
  ExecgateError,
  describeError,
  type ExecutionListener,
  type ExecutionListenerContext,
  type ExecutionRequest,
  type ExecutionResult,
  type RunInfo,
} from '../../core'
import type { Logger } from '../../observability/logger'
import type { BlobStore } from './blob-store'
import { parseBody, verifyChain } from './chain'
import { planVersionId, sandboxFileId } from './entry-links'
import { planVersionItem, sandboxFileItem } from './ledger-items'
import type { LedgerService, LedgerStats } from './ledger-service'
import { DEFAULT_TENANT, LedgerWriter, type LedgerItem, type LedgerWriterPort } from './ledger-writer'
import { traceLineage, type Lineage, type LineageLimits } from './lineage'
import { LedgerQueries, type ArtifactContent, type ExportOptions, type RunProvenanceRecord } from './ledger-queries'
import type { ProvDocument } from './prov-json'
import type { OpenLineageRunEvent } from './openlineage'
import type { LedgerRecordStore } from './record-store'
import type { RetentionPolicy, RetentionReport } from './retention'
import { captureRun } from './run-capture'
import type { DsseEnvelope } from './receipts/dsse'
import { ReceiptIssuer, type LedgerPublicKey } from './receipts/receipt-issuer'
import type { SigningKey } from './receipts/signing-key'
import type { ArtifactRef, ExportFormat, LedgerCaller, PlanVersionInput, SandboxFileInput, VerifyReport } from './types'

export { DEFAULT_TENANT } from './ledger-writer'

export interface ArtifactLedgerOptions {
  /** Opened at first use, so an execgate that never runs anything never opens a file or a connection. */
  openRecords: () => LedgerRecordStore
  openBlobs: () => BlobStore
  execgateVersion: string
  /** stdout/stderr at least this long are stored as artifacts. @default 1024 */
  outputThresholdBytes?: number
  retention?: RetentionPolicy & { intervalMinutes: number }
  logger?: Logger
  /**
   * The writer (hashing, blob writes, appends): `createLedger` gives a ThreadedLedgerWriter, off the result's path.
   * @default a LedgerWriter in this thread, on the ledger's own stores
   */
  writer?: (hooks: { onLost(count: number): void }) => LedgerWriterPort
  /** Records waiting to be written (heard, not yet written) at most; past it a run's record is counted lost and logged. @default 10000 */
  queueLimit?: number
  /** The receipt-signing key, loaded (or generated) at the first receipt; without it receipts are refused. */
  signingKey?: () => SigningKey
}

/** The default bound on records heard and not yet written (`fabric.ledger.queueLimit`). */
export const DEFAULT_QUEUE_LIMIT = 10_000
/** Records gathered on the result's path before they go to a writer in this thread at once (one transaction each). */
const BATCH = 500
/** How long a record may wait on the result's path before it goes to the writer (docs/ledger.md's flush window). */
export const FLUSH_DELAY_MS = 20
/** At most one "queue full" log line per this many ms, with the count lost since the last. */
const LOST_LOG_MS = 1000

/**
 * The artifact ledger: an `ExecutionListener` that records every run's provenance, and the queries over it.
 *
 * On the result's path it only copies what it needs (`captureRun`) and queues it; within FLUSH_DELAY_MS (at once for
 * a batch of the writer's `handOverBatch`: 256 to the writer thread, 500 to a writer in this thread) the queue goes to
 * the writer (LedgerWriter: hashing, blob writes, record appends; in a worker thread when built from config), which
 * writes it in order, one transaction per batch. The queue is bounded
 * (`queueLimit`): a run is never slowed by a writer that fell behind or a store that is down; past the bound its
 * record is counted lost (`stats().lost`, the metric `execgate_ledger_records_lost_total`) and logged. `close`
 * flushes: what was heard before dispose is written after it.
 */
export class ArtifactLedger implements ExecutionListener, LedgerService {
  private pending: LedgerItem[] = []
  /** The end time of the first run in `pending` (ms since the epoch); Infinity when it holds none. */
  private oldestEndedAt = Infinity
  private posted = 0
  private lost = 0
  private lostSinceLog = 0
  private lostLoggedAt = -Infinity
  private timer: NodeJS.Timeout | undefined
  private retentionTimer: NodeJS.Timeout | undefined
  private stores: { records: LedgerRecordStore; blobs: BlobStore } | undefined
  private readonly writer: LedgerWriterPort
  private readonly queueLimit: number
  private readonly queries: LedgerQueries
  private readonly receipts: ReceiptIssuer
  private signingKey: SigningKey | undefined
  private closed = false

  constructor(private readonly options: ArtifactLedgerOptions) {
    this.queries = new LedgerQueries(() => this.open())
    this.queueLimit = options.queueLimit ?? DEFAULT_QUEUE_LIMIT
    const onLost = (count: number) => this.countLost(count, 'the writer thread ended')
    this.writer =
      options.writer?.({ onLost }) ??
      new LedgerWriter({
        openRecords: () => this.open().records,
        openBlobs: () => this.open().blobs,
        execgateVersion: options.execgateVersion,
        outputThresholdBytes: options.outputThresholdBytes ?? 1024,
        ownsStores: false,
        ...(options.logger ? { logger: options.logger } : {}),
      })
    this.receipts = new ReceiptIssuer(
      () => this.open().records,
      (runId, tenant) => this.queries.record(runId, tenant),
      () => (this.signingKey ??= this.loadSigningKey()),
      this.queries.policies,
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
    if (!this.options.signingKey)
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', { detail: 'this ledger has no receipt-signing key (fabric.ledger.signing.key)' })
    return this.options.signingKey()
  }

  private open(): { records: LedgerRecordStore; blobs: BlobStore } {
    this.stores ??= { records: this.options.openRecords(), blobs: this.options.openBlobs() }
    return this.stores
  }

  stats(): LedgerStats {
    return {
      queued: this.pending.length + this.posted - this.writer.written,
      written: this.writer.written,
      lost: this.lost,
      queueLimit: this.queueLimit,
    }
  }

  onResult(result: ExecutionResult, request: ExecutionRequest, context?: ExecutionListenerContext | RunInfo): void {
    // Only the ExecutionService's calls carry a run id; a listener called by hand without one has nothing to record.
    const run = context && 'runId' in context ? context : undefined
    if (this.closed || !run) return
    if (this.pending.length + this.posted - this.writer.written >= this.queueLimit) return this.countLost(1, 'the write queue is full')
    if (this.oldestEndedAt === Infinity) this.oldestEndedAt = run.endedAt
    this.pending.push({ kind: 'run', captured: captureRun(result, request, run) })
    // Runs that never yield (monty's inline ones, back to back) never let the window's timer fire: the oldest
    // record's age, read from the run's own end time (no clock read), hands the queue over once it is past the window.
    if (run.endedAt - this.oldestEndedAt >= FLUSH_DELAY_MS) return this.post()
    this.schedule()
  }

  /** Never silent: a counter (stats, metrics) and a log line, at most one a second, with the count since the last. */
  private countLost(count: number, why: string): void {
    this.lost += count
    this.lostSinceLog += count
    const now = Date.now()
    if (now - this.lostLoggedAt < LOST_LOG_MS) return
    this.options.logger?.error(
      { lost: this.lostSinceLog, lostTotal: this.lost, queued: this.stats().queued, queueLimit: this.queueLimit },
      `ledger records lost: ${why} (fabric.ledger.queueLimit)`,
    )
    this.lostLoggedAt = now
    this.lostSinceLog = 0
  }

  private schedule(): void {
    // A full batch goes at once; otherwise within FLUSH_DELAY_MS, gathering that window's runs into one message and
    // one transaction (a commit per run cost a quickjs run ~370 µs in all, benchmarks.md). Not unref'd: a process that
    // ends without dispose still hands over what it heard.
    if (this.pending.length >= (this.writer.handOverBatch ?? BATCH)) return this.post()
    this.timer ??= setTimeout(() => this.post(), FLUSH_DELAY_MS)
  }

  /** Hands what is pending to the writer, which starts writing it at once. */
  private post(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.pending.length === 0) return
    const items = this.pending
    this.pending = []
    this.oldestEndedAt = Infinity
    this.posted += items.length
    this.writer.post(items)
  }

  flush(): Promise<void> {
    this.post()
    return this.writer.flush()
  }

  async queuePlanVersion(input: PlanVersionInput): Promise<void> {
    if (this.closed) throw new ExecgateError('EXECGATE_LEDGER_UNAVAILABLE', { detail: 'the ledger is closed' })
    this.pending.push(planVersionItem(input, this.options.execgateVersion))
    this.schedule()
  }

  async recordPlanVersion(input: PlanVersionInput): Promise<{ id: string; seq: number; document: ArtifactRef }> {
    const item = planVersionItem(input, this.options.execgateVersion)
    this.pending.push(item)
    await this.flush()
    // Recorded before (a retry of the merge)? The first record stands, and is what is answered.
    const stored = await this.open().records.byId(item.tenant, planVersionId(input.planId, input.version))
    const recorded = stored ? parseBody(stored).entry : undefined
    return {
      id: planVersionId(input.planId, input.version),
      seq: stored?.seq ?? 0,
      document: recorded?.kind === 'plan_version' ? recorded.document : item.entry.document,
    }
  }

  async recordSandboxFile(input: SandboxFileInput): Promise<{ id: string; seq: number; file: ArtifactRef }> {
    const item = sandboxFileItem(input, this.options.execgateVersion)
    this.pending.push(item)
    // Written before it answers: the caller may name the digest (a sandbox's files, GET /v1/artifacts) at once.
    await this.flush()
    const { tenant, sandboxId, file } = item.entry
    const id = sandboxFileId(sandboxId, file.path, file.sha256)
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
    return verifyChain({
      tenant,
      ...(head ? { head } : {}),
      ...(checkpoint ? { checkpoint } : {}),
      page: (after, limit) => records.page(tenant, after, limit),
      policy: (digest) => records.policy(digest),
    })
  }

  async tenants(): Promise<string[]> {
    await this.flush()
    return this.open().records.tenants()
  }

  export(format: 'prov-json', caller?: LedgerCaller, options?: ExportOptions): Promise<ProvDocument>
  export(format: 'openlineage', caller?: LedgerCaller, options?: ExportOptions): Promise<OpenLineageRunEvent[]>
  export(format: ExportFormat, caller?: LedgerCaller, options?: ExportOptions): Promise<ProvDocument | OpenLineageRunEvent[]>
  async export(
    format: ExportFormat,
    caller: LedgerCaller = {},
    options: ExportOptions = {},
  ): Promise<ProvDocument | OpenLineageRunEvent[]> {
    await this.flush()
    return this.queries.export(format, caller.tenant ?? DEFAULT_TENANT, options)
  }

  async applyRetention(options: { tenant?: string; policy?: RetentionPolicy; now?: number } = {}): Promise<RetentionReport> {
    const policy = options.policy ?? this.options.retention ?? { maxAgeDays: 0, maxBytesPerTenant: 0 }
    // On the writer's queue: no append (nor its blob writes) runs between the reference check and the delete.
    this.post()
    return this.writer.applyRetention(policy, options.now, options.tenant ? [options.tenant] : undefined)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearInterval(this.retentionTimer)
    await this.flush().catch((error) =>
      this.options.logger?.error(
        { err: describeError(error), lost: this.stats().queued },
        'ledger records could not be written before close',
      ),
    )
    await this.writer.close()
    await this.stores?.records.close()
  }
}
