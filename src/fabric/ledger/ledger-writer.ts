import { ExecgateError, describeError } from '../../core/errors'
import type { Logger } from '../../observability/logger'
import type { BlobStore } from './blob-store'
import { parseBody } from './chain'
import { planVersionId, sandboxFileId } from './entry-links'
import { JSON_MEDIA_TYPE } from './media-types'
import type { LedgerRecordStore } from './record-store'
import { applyRetention, type RetentionPolicy, type RetentionReport } from './retention'
import type { CapturedRun } from './run-capture'
import { runEntryJson } from './run-entry-json'
import { asBuffer, describeRun, type BlobWrite } from './run-record'
import type { ArtifactRef, PlanVersionRecord, PolicyText, RecordDraft, SandboxFileRecord } from './types'

export const DEFAULT_TENANT = 'local'

/** What the result's path hands the writer: plain data, so it can cross to the writer thread as it is. */
export type LedgerItem =
  | { kind: 'run'; captured: CapturedRun }
  | { kind: 'plan'; tenant: string; entry: Omit<PlanVersionRecord, 'previousDocument'>; bytes: Uint8Array }
  | { kind: 'sandbox_file'; entry: SandboxFileRecord; bytes: Uint8Array }

export interface LedgerWriterOptions {
  openRecords: () => LedgerRecordStore
  openBlobs: () => BlobStore
  execgateVersion: string
  outputThresholdBytes: number
  logger?: Logger
  /** Whether `close` closes the record store (false when the ledger's queries share it). @default true */
  ownsStores?: boolean
  /** Told the count of items written so far after each batch (the queue's depth is what was posted minus this). */
  onWritten?: (written: number) => void
  /** Called each time the queue has stayed empty for IDLE_MS. */
  onIdle?: () => void
}

/** One transaction per this many items at most. */
const BATCH = 500
const KNOWN_BLOBS = 10_000
const RETRY_MS = 1000
/** How long the queue stays empty before the record store's housekeeping (`idle`: SQLite's checkpoint) runs. */
const IDLE_MS = 250

/**
 * The ledger's writing side: hashing (`describeRun`), blob writes and record appends, in order, one batch at a time.
 * It runs in the ledger's writer thread (writer-thread.ts), or in the caller's thread for a ledger built on stores
 * passed in. Blobs are written before the records that name them, so a record never names bytes that are not stored.
 * When the store fails, the items stay queued and are tried again every second; the queue's bound is the ledger's
 * (it stops handing items over past `fabric.ledger.queueLimit`, counting and logging what it could not queue).
 */
export class LedgerWriter {
  private readonly queue: LedgerItem[] = []
  private chain: Promise<void> = Promise.resolve()
  private retry: NodeJS.Timeout | undefined
  private idleTimer: NodeJS.Timeout | undefined
  private stores: { records: LedgerRecordStore; blobs: BlobStore } | undefined
  private readonly knownBlobs = new Set<string>()
  /** Policies the record store has (by digest): each is handed to an append once, with the first records naming it. */
  private readonly knownPolicies = new Set<string>()
  private readonly planDocuments = new Map<string, ArtifactRef>()
  private closed = false
  /** Set by `handBack`: the batch being written is the last. */
  private handingBack = false
  private writeScheduled = false
  written = 0

  private readonly settings: { execgateVersion: string; outputThresholdBytes: number }

  constructor(private readonly options: LedgerWriterOptions) {
    this.settings = { execgateVersion: options.execgateVersion, outputThresholdBytes: options.outputThresholdBytes }
  }

  private open(): { records: LedgerRecordStore; blobs: BlobStore } {
    this.stores ??= { records: this.options.openRecords(), blobs: this.options.openBlobs() }
    return this.stores
  }

  /**
   * Queues items and starts writing them on the next turn of the event loop, not now: hand-overs that arrived
   * together (a writer thread behind a burst of runs finds several waiting when it finishes a batch) are then written
   * as one transaction instead of one each. A commit rewrites the pages its records share (the tables' and indexes'
   * last pages, the chain's head), so fewer, larger commits cost less a record.
   */
  post(items: readonly LedgerItem[]): void {
    for (const item of items) this.queue.push(item)
    if (this.writeScheduled) return
    this.writeScheduled = true
    setImmediate(() => {
      this.writeScheduled = false
      this.flush().catch(() => undefined)
    })
  }

  /** Resolves once every item posted so far is written; rejects (`EXECGATE_LEDGER_UNAVAILABLE`) when a write failed. */
  flush(): Promise<void> {
    return this.onChain(() => this.drain())
  }

  /** The retention policy, applied between two batches: no append runs between its reference check and its deletes. */
  applyRetention(policy: RetentionPolicy, now?: number, tenants?: string[]): Promise<RetentionReport> {
    return this.onChain(async () => {
      await this.drain()
      const { records, blobs } = this.open()
      const report = await applyRetention(records, blobs, policy, now, tenants)
      for (const sha of report.removedBlobs) this.knownBlobs.delete(sha)
      return report
    })
  }

  private onChain<T>(step: () => Promise<T>): Promise<T> {
    const done = this.chain.then(step)
    this.chain = done.then(
      () => undefined,
      () => undefined,
    )
    return done
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0 && !this.handingBack) {
      const batch = this.queue.splice(0, BATCH)
      try {
        await this.writeBatch(batch)
      } catch (error) {
        this.queue.unshift(...batch)
        this.options.logger?.error({ err: describeError(error), queued: this.queue.length }, 'ledger write failed; will try again')
        if (!this.closed && !this.retry) {
          this.retry = setTimeout(() => {
            this.retry = undefined
            this.flush().catch(() => undefined)
          }, RETRY_MS)
          this.retry.unref()
        }
        throw new ExecgateError('EXECGATE_LEDGER_UNAVAILABLE', { detail: describeError(error) }, { cause: error })
      }
      this.written += batch.length
      this.options.onWritten?.(this.written)
    }
    this.whenIdle()
  }

  /** The store's housekeeping once the queue has stayed empty for IDLE_MS, on the chain (never inside a batch). */
  private whenIdle(): void {
    clearTimeout(this.idleTimer)
    const records = this.stores?.records
    if ((!records?.idle && !this.options.onIdle) || this.closed) return
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined
      if (this.queue.length > 0 || this.closed) return
      this.options.onIdle?.()
      if (!records?.idle) return
      this.onChain(() => records.idle!()).catch((error) =>
        this.options.logger?.warn({ err: describeError(error) }, 'ledger store housekeeping failed'),
      )
    }, IDLE_MS)
    this.idleTimer.unref()
  }

  private async writeBatch(batch: readonly LedgerItem[]): Promise<void> {
    const { records, blobs } = this.open()
    const drafts: RecordDraft[] = []
    const writes = new Map<string, BlobWrite>()
    const policies = new Map<string, PolicyText>()
    for (const item of batch) {
      if (item.kind === 'sandbox_file') {
        const { file } = item.entry
        writes.set(file.sha256, { sha256: file.sha256, bytes: asBuffer(item.bytes), mediaType: file.mediaType })
        drafts.push({
          tenant: item.entry.tenant,
          id: sandboxFileId(item.entry.sandboxId, file.path, file.sha256),
          recordedAt: Date.now(),
          entry: item.entry,
        })
        continue
      }
      if (item.kind === 'plan') {
        const { entry } = item
        const previous =
          entry.previousVersion !== undefined ? await this.planDocument(item.tenant, entry.planId, entry.previousVersion) : undefined
        this.planDocuments.set(`${item.tenant}\n${planVersionId(entry.planId, entry.version)}`, entry.document)
        writes.set(entry.document.sha256, { sha256: entry.document.sha256, bytes: asBuffer(item.bytes), mediaType: JSON_MEDIA_TYPE })
        drafts.push({
          tenant: item.tenant,
          id: planVersionId(entry.planId, entry.version),
          recordedAt: Date.now(),
          entry: { ...entry, ...(previous ? { previousDocument: previous } : {}) },
        })
        continue
      }
      const tenant = item.captured.run.tenant ?? DEFAULT_TENANT
      const { policy } = item.captured
      if (policy && !this.knownPolicies.has(policy.sha256)) policies.set(policy.sha256, policy)
      const entry = describeRun(item.captured, tenant, this.settings, writes)
      if (entry.planId !== undefined && entry.planVersion !== undefined) {
        const document = await this.planDocument(tenant, entry.planId, entry.planVersion)
        if (document) entry.planDocument = document
      }
      // The JSON is made when the store chains the record, a few rows before it is written (RecordDraft.entryJson).
      drafts.push({ tenant, id: entry.runId, recordedAt: Date.now(), entry, entryJson: () => runEntryJson(entry) })
    }
    for (const blob of writes.values()) {
      if (this.knownBlobs.has(blob.sha256)) continue
      await blobs.put(blob.sha256, typeof blob.bytes === 'string' ? Buffer.from(blob.bytes) : blob.bytes, blob.mediaType)
      if (this.knownBlobs.size >= KNOWN_BLOBS) this.knownBlobs.clear()
      this.knownBlobs.add(blob.sha256)
    }
    // Not answered: the writer never reads the stored records, and the store need not keep them all until the end.
    await records.append(drafts, { answer: false, ...(policies.size > 0 ? { policies: [...policies.values()] } : {}) })
    for (const digest of policies.keys()) {
      if (this.knownPolicies.size >= KNOWN_BLOBS) this.knownPolicies.clear()
      this.knownPolicies.add(digest)
    }
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

  /**
   * Stops after the batch being written (a flush waiting on it resolves with the rest unwritten: the caller sends this
   * only with no flush, retention or close pending), closes the stores, and answers with the items not written, in
   * their order, for another writer to take over. This writer writes nothing more.
   */
  handBack(): Promise<LedgerItem[]> {
    this.handingBack = true
    return this.onChain(async () => {
      this.closed = true
      clearTimeout(this.retry)
      clearTimeout(this.idleTimer)
      const rest = this.queue.splice(0)
      // Never rejects: what is handed back is the same whether or not the store closed cleanly.
      if (this.options.ownsStores !== false)
        await this.stores?.records
          .close()
          .catch((error) => this.options.logger?.warn({ err: describeError(error) }, 'ledger store close failed'))
      return rest
    })
  }

  /** Writes what is queued (the store may still be down: then the items are counted as lost and logged), and closes. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    clearTimeout(this.retry)
    clearTimeout(this.idleTimer)
    await this.flush().catch((error) =>
      this.options.logger?.error(
        { err: describeError(error), lost: this.queue.length },
        'ledger records could not be written before close',
      ),
    )
    if (this.options.ownsStores !== false) await this.stores?.records.close()
  }
}

/** What the ledger needs of its writer, in its thread or in the caller's (LedgerWriter itself). */
export interface LedgerWriterPort {
  readonly written: number
  /** Records the result's path gathers before handing them over at once (otherwise within the flush window). @default 500 */
  readonly handOverBatch?: number
  post(items: readonly LedgerItem[]): void
  flush(): Promise<void>
  applyRetention(policy: RetentionPolicy, now?: number, tenants?: string[]): Promise<RetentionReport>
  close(): Promise<void>
}
