import { ExecgateError } from '../../../core'
import { parseBody } from '../chain'
import { planVersionId } from '../entry-links'
import type { RunProvenanceRecord } from '../ledger-queries'
import type { LedgerRecordStore } from '../record-store'
import type { PolicyReader } from '../stored-policies'
import type { PlanVersionRecord, RunRecord, StoredRecord } from '../types'
import { signEnvelope, type DsseEnvelope } from './dsse'
import type { SigningKey } from './signing-key'
import {
  IN_TOTO_PAYLOAD_TYPE,
  payloadDigest,
  planStatement,
  runStatement,
  statementBytes,
  type ChainPlace,
  type PlanStepEntry,
} from './statement'

/** The server's public key as `GET /v1/ledger/public-key` answers it. */
export interface LedgerPublicKey {
  algorithm: 'ed25519'
  keyid: string
  /** SPKI PEM: give it to `execgate ledger verify-receipt --key`. */
  publicKeyPem: string
}

/** Retention removes a chain's oldest records: a plan's first versions may be gone while later ones are kept. */
const MISSING_VERSIONS_TOLERATED = 64

const placeOf = (stored: StoredRecord): ChainPlace => ({ seq: stored.seq, hash: stored.hash, prevHash: parseBody(stored).prevHash })

/**
 * Issues signed receipts from the ledger's records (docs/ledger.md, Signed receipts): built from the record as stored,
 * so a receipt asked for twice is the same bytes, and signed with the server's Ed25519 key.
 */
export class ReceiptIssuer {
  constructor(
    private readonly records: () => LedgerRecordStore,
    private readonly runRecord: (runId: string, tenant: string) => Promise<RunProvenanceRecord>,
    private readonly signingKey: () => SigningKey,
    private readonly policies: PolicyReader,
  ) {}

  publicKey(): LedgerPublicKey {
    const key = this.signingKey()
    return { algorithm: 'ed25519', keyid: key.keyid, publicKeyPem: key.publicKeyPem }
  }

  private sign(payload: Buffer): DsseEnvelope {
    const key = this.signingKey()
    return signEnvelope(IN_TOTO_PAYLOAD_TYPE, payload, key.privateKey, key.keyid)
  }

  async run(runId: string, tenant: string): Promise<DsseEnvelope> {
    const { record, seq, hash, prevHash } = await this.runRecord(runId, tenant)
    return this.sign(statementBytes(runStatement(record, { seq, hash, prevHash })))
  }

  async plan(planId: string, tenant: string): Promise<DsseEnvelope> {
    if (typeof planId !== 'string' || !planId)
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'a plan receipt needs the plan id' })
    const store = this.records()
    const versions: { record: PlanVersionRecord; place: ChainPlace }[] = []
    for (let version = 1, misses = 0; ; version++) {
      const stored = await store.byId(tenant, planVersionId(planId, version))
      const entry = stored ? parseBody(stored).entry : undefined
      if (!stored || entry?.kind !== 'plan_version') {
        if (versions.length > 0 || ++misses > MISSING_VERSIONS_TOLERATED) break
        continue
      }
      versions.push({ record: entry, place: placeOf(stored) })
    }
    if (versions.length === 0)
      throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no recorded plan "${planId}" for tenant ${tenant}` })
    // A step's run names its version's document as its plan (role `plan`): the runs that used those documents.
    const seqs = await store.linkedSeqs(tenant, [...new Set(versions.map(({ record }) => record.document.sha256))], 'used')
    const runs = (await store.bySeq(tenant, [...new Set(seqs)]))
      .map((stored) => ({ stored, entry: parseBody(stored).entry }))
      .filter((item): item is { stored: StoredRecord; entry: RunRecord } => item.entry.kind === 'run' && item.entry.planId === planId)
      .sort((a, b) => a.stored.seq - b.stored.seq)
    // Each step's receipt digest is of the receipt `run` gives for it: the record with its policy put back.
    for (const { entry } of runs) await this.policies.complete(entry)
    const steps: PlanStepEntry[] = runs.map(({ stored, entry }) => ({
      runId: entry.runId,
      ...(entry.stepId !== undefined ? { stepId: entry.stepId } : {}),
      ...(entry.planVersion !== undefined ? { planVersion: entry.planVersion } : {}),
      ...(entry.taskId !== undefined ? { taskId: entry.taskId } : {}),
      ...(entry.attempt !== undefined ? { attempt: entry.attempt } : {}),
      status: entry.status,
      receiptSha256: payloadDigest(statementBytes(runStatement(entry, placeOf(stored)))),
    }))
    return this.sign(statementBytes(planStatement(planId, tenant, versions, steps)))
  }
}
