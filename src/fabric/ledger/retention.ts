import { parseBody } from './chain'
import { linksOf } from './entry-links'
import type { BlobStore } from './blob-store'
import type { LedgerRecordStore } from './record-store'
import type { ChainPoint } from './types'

export interface RetentionPolicy {
  /** Records recorded longer ago than this are removed; 0 keeps them for ever. */
  maxAgeDays: number
  /** A tenant's oldest records are removed while its kept records reference more bytes than this; 0: no limit. */
  maxBytesPerTenant: number
}

export interface RetentionReport {
  tenants: { tenant: string; removedRecords: number; checkpoint?: ChainPoint; bytes: number }[]
  /** Blobs deleted: referenced by no kept record of any tenant. */
  removedBlobs: string[]
}

const DAY_MS = 86_400_000
const PAGE = 1000

/**
 * The seq through which the oldest records (after `after`) reference at least `excess` bytes. Counted per record, an
 * artifact shared by kept records is counted though removing these would not free it: so this never removes more
 * than needed, and the caller counts the tenant's bytes again and goes on while still over.
 */
async function oldestCovering(store: LedgerRecordStore, tenant: string, after: number, excess: number): Promise<number> {
  let counted = 0
  for (let from = after; ;) {
    const records = await store.page(tenant, from, PAGE)
    for (const record of records) {
      const distinct = new Map(linksOf(parseBody(record).entry).map((link) => [link.sha256, link.size]))
      for (const size of distinct.values()) counted += size
      if (counted >= excess) return record.seq
    }
    if (records.length < PAGE) return records.length ? records[records.length - 1]!.seq : from
    from = records[records.length - 1]!.seq
  }
}

/**
 * Applies the policy to each tenant's chain: only ever a prefix of it (the oldest records), so what is kept still
 * verifies from the checkpoint (the last removed record's seq and hash). A blob is deleted only when no kept record of
 * any tenant references it: artifacts are shared by content, and another tenant, or a newer record, may still name
 * it. The caller serialises this with its own appends (the ledger runs it on its write queue), so a blob cannot be
 * referenced afresh between the check and the delete.
 */
export async function applyRetention(
  store: LedgerRecordStore,
  blobs: BlobStore,
  policy: RetentionPolicy,
  now = Date.now(),
  only?: readonly string[],
): Promise<RetentionReport> {
  const report: RetentionReport = { tenants: [], removedBlobs: [] }
  const candidates = new Set<string>()
  for (const tenant of only ?? (await store.tenants())) {
    const start = (await store.checkpoint(tenant))?.seq ?? 0
    let through = start
    if (policy.maxAgeDays > 0) {
      const cutoff = now - policy.maxAgeDays * DAY_MS
      // The oldest records, up to the first one young enough to keep (a prefix, never a hole in the chain).
      scan: for (let after = start; ;) {
        const records = await store.page(tenant, after, PAGE)
        for (const record of records) {
          if (parseBody(record).recordedAt >= cutoff) break scan
          through = record.seq
        }
        if (records.length < PAGE) break
        after = records[records.length - 1]!.seq
      }
      if (through > start) for (const sha of await store.removeThrough(tenant, through)) candidates.add(sha)
    }
    if (policy.maxBytesPerTenant > 0) {
      for (let bytes = await store.tenantBytes(tenant); bytes > policy.maxBytesPerTenant; bytes = await store.tenantBytes(tenant)) {
        const cut = await oldestCovering(store, tenant, through, bytes - policy.maxBytesPerTenant)
        if (cut === through) break
        through = cut
        for (const sha of await store.removeThrough(tenant, through)) candidates.add(sha)
      }
    }
    const checkpoint = await store.checkpoint(tenant)
    report.tenants.push({
      tenant,
      removedRecords: through - start,
      ...(checkpoint ? { checkpoint } : {}),
      bytes: await store.tenantBytes(tenant),
    })
  }
  for (const sha of candidates) if (!(await store.referenced(sha))) report.removedBlobs.push(sha)
  await blobs.delete(report.removedBlobs)
  return report
}
