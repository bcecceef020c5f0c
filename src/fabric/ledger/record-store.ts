import type { ArtifactLink, ChainPoint, PolicyText, RecordDraft, StoredRecord } from './types'

export interface AppendOptions {
  /** Whether the caller wants the stored records back. @default true */
  answer?: boolean
  /**
   * Policies the drafts name by digest (`policySha256`) that the store may not have yet: kept once per digest, with
   * the records (an append stores both or neither), and never removed by retention (a few hundred bytes each).
   */
  policies?: readonly PolicyText[]
}

/**
 * Where ledger records live: one interface, two stores (embedded SQLite, the default; Redis, shared by every node of
 * a distributed deployment). The ledger's rules (the chain, lineage, retention, tenant scoping) live above it, so both
 * stores behave alike; test/fabric/ledger runs one suite against both.
 */
export interface LedgerRecordStore {
  /**
   * Appends each draft to its tenant's chain (after the head, or after the retention checkpoint), atomically per
   * call. A draft whose id the tenant already has is not appended again: the stored record is returned instead.
   * With `answer: false` (the ledger's writer, which never reads them) a store may answer `[]`, and need not keep
   * every record of the batch, bodies included, alive until the batch ends.
   */
  append(drafts: readonly RecordDraft[], options?: AppendOptions): Promise<StoredRecord[]>
  byId(tenant: string, id: string): Promise<StoredRecord | undefined>
  bySeq(tenant: string, seqs: readonly number[]): Promise<StoredRecord[]>
  /** The tenant's kept records with seq > afterSeq, in order, at most `limit`. */
  page(tenant: string, afterSeq: number, limit: number): Promise<StoredRecord[]>
  /** Seqs of the tenant's records that used (`used`) or generated (`generated`) any of these artifacts. */
  linkedSeqs(tenant: string, sha256s: readonly string[], direction: 'used' | 'generated'): Promise<number[]>
  /** How one of the tenant's records names this artifact; undefined when none of its kept records does. */
  artifact(tenant: string, sha256: string): Promise<ArtifactLink | undefined>
  head(tenant: string): Promise<ChainPoint | undefined>
  checkpoint(tenant: string): Promise<ChainPoint | undefined>
  tenants(): Promise<string[]>
  /**
   * Retention: removes the tenant's records from the start of its kept chain through `seq` and makes that record the
   * checkpoint. Returns the digests the removed records referenced (candidates for blob removal).
   */
  removeThrough(tenant: string, seq: number): Promise<string[]>
  /** A policy's canonical JSON by its SHA-256, as an append stored it; undefined when no append did. */
  policy(sha256: string): Promise<string | undefined>
  /** Whether any kept record of any tenant references the artifact (a blob is removed only when none does). */
  referenced(sha256: string): Promise<boolean>
  /** Bytes of the distinct artifacts the tenant's kept records reference. */
  tenantBytes(tenant: string): Promise<number>
  /**
   * Called by the ledger's writer when it has had nothing to write for a while: housekeeping that should not run
   * inside a batch (the SQLite store's WAL checkpoint).
   */
  idle?(): Promise<void>
  close(): Promise<void>
}
