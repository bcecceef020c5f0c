import type { RetentionPolicy } from './retention'
import type { HandOver } from './writer-handover'

/** The messages between the ledger (ThreadedLedgerWriter) and its writer thread (writer-thread.ts). */

export interface WriterThreadData {
  /** The `fabric` settings the stores are opened from (LedgerFabricSettings: plain config values). */
  fabric: unknown
  execgateVersion: string
  outputThresholdBytes: number
}

export type WriterRequest =
  | { op: 'post'; handOver: HandOver }
  | { op: 'flush'; id: number }
  | { op: 'retention'; id: number; policy: RetentionPolicy; now?: number; tenants?: string[] }
  | { op: 'close'; id: number }

export type WriterReply =
  | { op: 'written'; written: number }
  | { op: 'done'; id: number; value?: unknown }
  | { op: 'failed'; id: number; detail: string }
  | { op: 'log'; level: 'warn' | 'error'; fields: object; msg: string }
