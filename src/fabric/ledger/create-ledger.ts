import { ExecgateError } from '../../core'
import type { Logger } from '../../observability/logger'
import { ArtifactLedger } from './ledger'
import type { LedgerService } from './ledger-service'
import { openBlobStore, openRecordStore, s3SettingsFrom, type LedgerFabricSettings } from './open-stores'
import { ThreadedLedgerWriter } from './threaded-writer'
import { loadSigningKey } from './receipts/signing-key'

export { openBlobStore, openRecordStore, s3SettingsFrom, type LedgerFabricSettings } from './open-stores'

/** A ledger switched off (`fabric.ledger.enabled: false`): every query says so; flushing and closing do nothing. */
export function disabledLedger(): LedgerService {
  const off = async (): Promise<never> => {
    throw new ExecgateError('EXECGATE_LEDGER_DISABLED')
  }
  return {
    provenance: off,
    record: off,
    receipt: off,
    planReceipt: off,
    publicKey: off,
    lineage: off,
    artifact: off,
    verify: off,
    export: off,
    recordPlanVersion: off,
    queuePlanVersion: off,
    recordSandboxFile: off,
    tenants: off,
    applyRetention: off,
    flush: async () => undefined,
    close: async () => undefined,
  }
}

/** The ledger the config describes; stores open at first use. A bad storage setting throws here, at start-up. */
export function createLedger(fabric: LedgerFabricSettings, options: { execgateVersion: string; logger?: Logger }): ArtifactLedger {
  if (fabric.ledger.blobs === 's3') s3SettingsFrom(fabric.s3, 'fabric.ledger.blobs')
  const { retention } = fabric.ledger
  return new ArtifactLedger({
    openRecords: () => openRecordStore(fabric),
    openBlobs: () => openBlobStore(fabric),
    execgateVersion: options.execgateVersion,
    outputThresholdBytes: fabric.ledger.outputThresholdBytes,
    signingKey: () => loadSigningKey(fabric.ledger.signing.key, fabric.dataDir),
    retention: {
      maxAgeDays: retention.maxAgeDays,
      maxBytesPerTenant: retention.maxBytesPerTenant,
      intervalMinutes: retention.intervalMinutes,
    },
    queueLimit: fabric.ledger.queueLimit,
    ...(options.logger ? { logger: options.logger } : {}),
    // In a worker thread: hashing and writes off the result's path (docs/ledger.md, "How it stays cheap").
    ...(fabric.ledger.writer === 'thread'
      ? {
          writer: ({ onLost }) =>
            new ThreadedLedgerWriter(
              {
                fabric: JSON.parse(JSON.stringify(fabric)) as unknown,
                execgateVersion: options.execgateVersion,
                outputThresholdBytes: fabric.ledger.outputThresholdBytes,
                nice: fabric.ledger.writerNice,
              },
              // Well before the queue's bound: the thread that takes over has time to catch up before records are lost.
              {
                onLost,
                behindAt: Math.max(1, Math.floor(fabric.ledger.queueLimit / 10)),
                ...(options.logger ? { logger: options.logger } : {}),
              },
            ),
        }
      : {}),
  })
}
