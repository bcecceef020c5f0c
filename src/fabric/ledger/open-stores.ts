import path from 'node:path'
import { ExecgateError } from '../../core/errors'
import type { LedgerConfig, S3Config } from '../../config/ledger-schema'
import type { DeepReadonly } from '../../config/load'
import type { FabricStoreKind } from '../../config/store-kinds'
import { S3Objects, type S3Settings } from '../../workspace/s3-objects'
import { storeDriver } from '../drivers'
import { DirectoryBlobStore, S3BlobStore, type BlobStore } from './blob-store'
import type { LedgerRecordStore } from './record-store'

/**
 * The ledger's stores as the config names them: opened by the ledger for its queries and, with their own connections,
 * by its writer thread (writer-thread.ts), which is why this file imports nothing of the ledger itself.
 */

/** The `fabric` keys the ledger is opened from, so the library, `serve` and the CLI open the same one. */
export interface LedgerFabricSettings {
  store: FabricStoreKind
  dataDir: string
  redisUrl: string
  redisPrefix: string
  leaseMs: number
  ledger: DeepReadonly<LedgerConfig>
  s3: DeepReadonly<S3Config>
}

/** The bucket `fabric.s3` names, for the ledger's blobs and bucket-backed workspaces; a missing bucket stops start-up. */
export function s3SettingsFrom(s3: DeepReadonly<S3Config>, key: string): S3Settings {
  if (!s3.bucket)
    throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
      detail: `${key} is "s3" but fabric.s3.bucket is empty: name the bucket (EXECGATE_FABRIC_S3_BUCKET)`,
    })
  return {
    bucket: s3.bucket,
    prefix: s3.prefix,
    ...(s3.endpoint ? { endpoint: s3.endpoint } : {}),
    region: s3.region,
    forcePathStyle: s3.forcePathStyle,
  }
}

/** The record store of the driver `fabric.ledger.store` names (`auto`: the one `fabric.store` names). */
export function openRecordStore(fabric: LedgerFabricSettings): LedgerRecordStore {
  return storeDriver(fabric.ledger.store === 'auto' ? fabric.store : fabric.ledger.store).ledgerRecords(fabric)
}

export function openBlobStore(fabric: LedgerFabricSettings): BlobStore {
  if (fabric.ledger.blobs === 'directory') return new DirectoryBlobStore(fabric.ledger.blobDir || path.join(fabric.dataDir, 'blobs'))
  return new S3BlobStore(new S3Objects(s3SettingsFrom(fabric.s3, 'fabric.ledger.blobs')))
}
