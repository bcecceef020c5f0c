import type { SecurityPolicy } from '../../core/types'
import { sha256 } from './digest'
import type { LedgerRecordStore } from './record-store'
import type { LedgerEntry, RunLimits } from './types'

/**
 * A run's record names its policy by digest (`policySha256`); the record store keeps each policy's canonical JSON
 * once (`LedgerRecordStore.policy`). It was ~0.55 KB of every ~1.5 KB record before (the policy and its limits),
 * hashed, written to the WAL and checkpointed again for every run. A read puts `policy` and `limits` back in the
 * record, so what the ledger answers (the record, provenance, exports, receipts) is what it was; records written
 * before, with the policy inline, are read as they are.
 */

/** The limits a record shows, from its policy. */
export function limitsOf(policy: SecurityPolicy): RunLimits {
  return {
    wallTimeMs: policy.wallTimeMs,
    cpuTimeMs: policy.cpuTimeMs,
    memoryMb: policy.memoryMb,
    outputBytes: policy.outputBytes,
    network: policy.network,
    filesystem: policy.filesystem,
    maxProcesses: policy.maxProcesses,
    hostCalls: { maxCount: policy.hostCalls.maxCount, maxTotalMs: policy.hostCalls.maxTotalMs },
  }
}

/** Policies' texts kept at most (a text is a few hundred bytes; a deployment has a handful of policies). */
const CACHED = 1000

/** Fills in the policy of the run records a query reads, from the store, by digest. */
export class PolicyReader {
  /** Texts that hash to their digest (a policy is immutable by its digest), by digest. */
  private readonly texts = new Map<string, string>()

  constructor(private readonly records: () => LedgerRecordStore) {}

  /**
   * The entry, with `policy` and `limits` filled in (in place) when it names its policy by digest only. A policy that
   * is not stored, or whose stored text no longer hashes to its digest (edited), is left out: never a policy the
   * digest does not cover. `verify` reports either.
   */
  async complete<T extends LedgerEntry>(entry: T): Promise<T> {
    if (entry.kind !== 'run' || !entry.policySha256 || entry.policy !== undefined) return entry
    const text = await this.text(entry.policySha256)
    if (text === undefined) return entry
    // Parsed for each record: the caller owns what it is answered, and may change it.
    const policy = JSON.parse(text) as SecurityPolicy
    entry.limits = limitsOf(policy)
    entry.policy = policy
    return entry
  }

  private async text(digest: string): Promise<string | undefined> {
    const known = this.texts.get(digest)
    if (known !== undefined) return known
    const text = await this.records().policy(digest)
    if (text === undefined || sha256(text) !== digest) return undefined
    if (this.texts.size >= CACHED) this.texts.clear()
    this.texts.set(digest, text)
    return text
  }
}
