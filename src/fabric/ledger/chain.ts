import { sha256 } from './digest'
import { restoreOmitted } from './run-entry-json'
import type { ChainPoint, RecordBody, RecordDraft, StoredRecord, VerifyReport } from './types'

/**
 * The per-tenant hash chain. A record's body is the JSON text `{seq, prevHash, recordedAt, entry}` and its hash is
 * the SHA-256 of that text, so editing a record breaks its own hash, re-hashing it breaks the next record's
 * `prevHash`, and removing one leaves a gap in `seq`. Retention removes only a prefix of the chain and keeps the last
 * removed record's seq and hash as the checkpoint the kept part starts from.
 */

export const GENESIS: ChainPoint = { seq: 0, hash: '' }

/** The draft as the record after `previous` (the tenant's head, its checkpoint, or GENESIS). */
export function chainRecord(draft: RecordDraft, previous: ChainPoint): StoredRecord {
  const seq = previous.seq + 1
  // The same text as JSON.stringify of the body, with the entry's JSON made by the writer's function when it has one.
  const entryJson = draft.entryJson?.()
  const text =
    entryJson === undefined
      ? JSON.stringify({ seq, prevHash: previous.hash, recordedAt: draft.recordedAt, entry: draft.entry } satisfies RecordBody)
      : `{"seq":${seq},"prevHash":${JSON.stringify(previous.hash)},"recordedAt":${JSON.stringify(draft.recordedAt)},` +
        `"entry":${entryJson}}`
  return { tenant: draft.tenant, seq, id: draft.id, body: text, hash: sha256(text) }
}

/** A stored record's body, its entry as the writer had it (keys its text leaves out put back: run-entry-json.ts). */
export function parseBody(record: Pick<StoredRecord, 'body'>): RecordBody {
  const body = JSON.parse(record.body) as RecordBody
  restoreOmitted(body.entry)
  return body
}

/** What `verifyChain` reads the chain through: the kept records in order, a page at a time. */
export interface ChainSource {
  tenant: string
  checkpoint?: ChainPoint
  head?: ChainPoint
  /** Records with seq > afterSeq in seq order, at most `limit`. */
  page(afterSeq: number, limit: number): Promise<StoredRecord[]>
  /** A policy's stored canonical JSON by digest: run records name their policy by digest (stored-policies.ts). */
  policy?(sha256: string): Promise<string | undefined>
}

const PAGE = 1000

/** Walks the tenant's chain from its checkpoint and reports the first broken link, if any. */
export async function verifyChain(source: ChainSource): Promise<VerifyReport> {
  const start = source.checkpoint ?? GENESIS
  let previous = start
  let count = 0
  /** Policies found stored and hashing to their digest. */
  const policies = new Set<string>()
  const report = (broken?: VerifyReport['broken']): VerifyReport => ({
    tenant: source.tenant,
    ok: !broken,
    records: count,
    ...(source.head ? { head: source.head } : {}),
    ...(source.checkpoint ? { checkpoint: source.checkpoint } : {}),
    ...(broken ? { broken } : {}),
  })
  for (;;) {
    const records = await source.page(previous.seq, PAGE)
    for (const record of records) {
      const expected = previous.seq + 1
      if (record.seq !== expected)
        return report({ seq: expected, reason: `record ${expected} is missing: the chain goes from ${previous.seq} to ${record.seq}` })
      let body: RecordBody
      try {
        body = parseBody(record)
      } catch {
        return report({ seq: record.seq, id: record.id, reason: 'its body is not valid JSON' })
      }
      if (sha256(record.body) !== record.hash)
        return report({ seq: record.seq, id: record.id, reason: 'its content does not match its hash (the record was edited)' })
      if (body.seq !== record.seq) return report({ seq: record.seq, id: record.id, reason: `its body says seq ${body.seq}` })
      if (body.prevHash !== previous.hash) {
        return report({
          seq: record.seq,
          id: record.id,
          reason: `its prevHash does not match the hash of record ${previous.seq} (that record was edited or replaced)`,
        })
      }
      if (body.entry?.tenant !== source.tenant)
        return report({ seq: record.seq, id: record.id, reason: `it belongs to tenant ${String(body.entry?.tenant)}` })
      const { entry } = body
      // A record that names its policy by digest only (not inline, as older records do): that policy must be stored,
      // and still be the text its digest is of. The record's own hash covers the digest.
      if (source.policy && entry.kind === 'run' && entry.policySha256 && entry.policy === undefined && !policies.has(entry.policySha256)) {
        const text = await source.policy(entry.policySha256)
        if (text === undefined) return report({ seq: record.seq, id: record.id, reason: `its policy ${entry.policySha256} is not stored` })
        if (sha256(text) !== entry.policySha256)
          return report({
            seq: record.seq,
            id: record.id,
            reason: `its policy ${entry.policySha256} was edited (the stored text does not match it)`,
          })
        policies.add(entry.policySha256)
      }
      previous = { seq: record.seq, hash: record.hash }
      count++
    }
    if (records.length < PAGE) break
  }
  const head = source.head ?? start
  if (head.seq !== previous.seq || head.hash !== previous.hash) {
    const seq = Math.min(head.seq, previous.seq + 1)
    return report({
      seq,
      reason:
        head.seq > previous.seq
          ? `records ${previous.seq + 1} to ${head.seq} are missing (the head is ${head.seq})`
          : `the head (${head.seq}) does not match the last record (${previous.seq})`,
    })
  }
  return report()
}
