import { ExecgateError } from '../../core'
import type { BlobStore } from './blob-store'
import { parseBody } from './chain'
import { planVersionId } from './entry-links'
import { openLineageEvent, type OpenLineageRunEvent } from './openlineage'
import { ProvDocumentBuilder, type ProvDocument } from './prov-json'
import type { LedgerRecordStore } from './record-store'
import { PolicyReader } from './stored-policies'
import { EXPORT_FORMATS, type ExportFormat, type RunRecord } from './types'

/** A run's record with its place in the tenant's chain. */
export interface RunProvenanceRecord {
  record: RunRecord
  seq: number
  hash: string
  prevHash: string
}

export interface ArtifactContent {
  sha256: string
  mediaType: string
  size: number
  content: Buffer
}

export interface ExportOptions {
  /** Only records with a seq above this (to export in pages, or from where the last export stopped). */
  afterSeq?: number
  /** At most this many records. @default 10000 */
  limit?: number
}

const DIGEST = /^[0-9a-f]{64}$/
const EXPORT_LIMIT = 10_000
const PAGE = 1000

/** The ledger's read side, tenant by tenant. Another tenant's record or artifact answers exactly like a missing one. */
export class LedgerQueries {
  /** Puts back the policy a run's record names by digest (stored-policies.ts): every record answered goes through it. */
  readonly policies: PolicyReader

  constructor(private readonly stores: () => { records: LedgerRecordStore; blobs: BlobStore }) {
    this.policies = new PolicyReader(() => this.stores().records)
  }

  static digest(sha256: string): string {
    const normalised =
      typeof sha256 === 'string'
        ? sha256
            .trim()
            .toLowerCase()
            .replace(/^sha256:/, '')
        : ''
    if (!DIGEST.test(normalised))
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'an artifact is named by its SHA-256: 64 hexadecimal characters' })
    return normalised
  }

  static missingArtifact(sha256: string, tenant: string): ExecgateError {
    return new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no artifact ${sha256} for tenant ${tenant}` })
  }

  async record(runId: string, tenant: string): Promise<RunProvenanceRecord> {
    const stored =
      typeof runId === 'string' && runId && !runId.startsWith('plan:') ? await this.stores().records.byId(tenant, runId) : undefined
    const body = stored ? parseBody(stored) : undefined
    if (!stored || body?.entry.kind !== 'run')
      throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no run "${runId}" for tenant ${tenant}` })
    return { record: await this.policies.complete(body.entry), seq: stored.seq, hash: stored.hash, prevHash: body.prevHash }
  }

  async provenance(runId: string, tenant: string): Promise<ProvDocument> {
    const { record } = await this.record(runId, tenant)
    const builder = new ProvDocumentBuilder().add(record)
    // A plan step's document was recorded as a plan version: its revision relation belongs to the step's story.
    if (record.planId !== undefined && record.planVersion !== undefined) {
      const version = await this.stores().records.byId(tenant, planVersionId(record.planId, record.planVersion))
      if (version) builder.add(parseBody(version).entry)
    }
    return builder.build()
  }

  async artifact(sha256: string, tenant: string): Promise<ArtifactContent> {
    const digest = LedgerQueries.digest(sha256)
    const { records, blobs } = this.stores()
    const link = await records.artifact(tenant, digest)
    const content = link ? await blobs.get(digest) : undefined
    if (!link || !content) throw LedgerQueries.missingArtifact(digest, tenant)
    return { sha256: digest, mediaType: link.mediaType, size: content.length, content }
  }

  async export(format: ExportFormat, tenant: string, options: ExportOptions): Promise<ProvDocument | OpenLineageRunEvent[]> {
    if (!(EXPORT_FORMATS as readonly string[]).includes(format))
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `format must be one of: ${EXPORT_FORMATS.join(', ')}` })
    const limit = Math.max(1, Math.min(options.limit ?? EXPORT_LIMIT, EXPORT_LIMIT))
    const builder = new ProvDocumentBuilder()
    const events: OpenLineageRunEvent[] = []
    let after = options.afterSeq ?? (await this.stores().records.checkpoint(tenant))?.seq ?? 0
    for (let taken = 0; taken < limit;) {
      const records = await this.stores().records.page(tenant, after, Math.min(PAGE, limit - taken))
      for (const stored of records) {
        const entry = await this.policies.complete(parseBody(stored).entry)
        if (format === 'prov-json') builder.add(entry)
        else if (entry.kind === 'run') events.push(openLineageEvent(entry))
      }
      taken += records.length
      if (records.length === 0) break
      after = records[records.length - 1]!.seq
    }
    return format === 'prov-json' ? builder.build() : events
  }
}
