import type { RetentionPolicy } from './retention'
import type { HandOver } from './writer-handover'

/** The messages between the ledger (ThreadedLedgerWriter) and its writer thread (writer-thread.ts). */

export interface WriterThreadData {
  /** The `fabric` settings the stores are opened from (LedgerFabricSettings: plain config values). */
  fabric: unknown
  execgateVersion: string
  outputThresholdBytes: number
  /** How far the thread lowers its priority (fabric.ledger.writerNice); 0: never. */
  nice: number
  /**
   * Lower it at once (a first thread, nothing behind it), rather than once its queue has stayed empty for a moment (a
   * thread that takes over from one that fell behind).
   */
  niceAtStart: boolean
}

export type WriterRequest =
  | { op: 'post'; handOver: HandOver }
  | { op: 'flush'; id: number }
  | { op: 'retention'; id: number; policy: RetentionPolicy; now?: number; tenants?: string[] }
  | { op: 'close'; id: number }
  /** Stop after the batch being written, close the stores, and answer with what is not written (`handedBack`). */
  | { op: 'handBack' }

export type WriterReply =
  | { op: 'written'; written: number }
  /** The thread lowered its priority. */
  | { op: 'niced' }
  /** After `handBack`: the items not written, in their order, and the count written in all. The thread then ends. */
  | { op: 'handedBack'; handOver: HandOver; written: number }
  | { op: 'done'; id: number; value?: unknown }
  | { op: 'failed'; id: number; detail: string }
  | { op: 'log'; level: 'warn' | 'error'; fields: object; msg: string }
