import { formats } from './formats'
import { FABRIC_STORE_KINDS, type FabricStoreKind } from './store-kinds'

/**
 * The artifact ledger's keys (`fabric.ledger.*`) and the bucket it and the bucket-backed workspaces share
 * (`fabric.s3.*`), composed into the schema by src/config/schema.ts. docs/ledger.md explains each choice.
 */
export interface LedgerConfig {
  /** Record every execution's provenance and keep its artifacts. @default true @env EXECGATE_FABRIC_LEDGER_ENABLED */
  enabled: boolean
  /**
   * Where records live: `sqlite` (`ledger.sqlite` in `fabric.dataDir`), `redis` (`fabric.redisUrl`, shared by every
   * node), or `auto`: the same kind as `fabric.store`. @default 'auto' @env EXECGATE_FABRIC_LEDGER_STORE
   */
  store: 'auto' | FabricStoreKind
  /**
   * Where artifacts' bytes live: `directory` (`blobDir`) or `s3` (`fabric.s3.*`). @default 'directory' @env
   * EXECGATE_FABRIC_LEDGER_BLOBS */
  blobs: 'directory' | 's3'
  /** Folder of the `directory` blob store; empty for `<fabric.dataDir>/blobs`. @default '' @env EXECGATE_FABRIC_LEDGER_BLOB_DIR */
  blobDir: string
  /**
   * stdout and stderr at least this long are kept as artifacts (shorter ones: their digest only).
   * @default 1024 @env EXECGATE_FABRIC_LEDGER_OUTPUT_THRESHOLD_BYTES
   */
  outputThresholdBytes: number
  /**
   * Where hashing, blob writes and record appends run: `thread` (a worker thread, off the result's path) or `inline`
   * (the caller's thread, batched: a one-shot CLI run spares the thread's start). @default 'thread' @env EXECGATE_FABRIC_LEDGER_WRITER
   */
  writer: 'thread' | 'inline'
  /**
   * How far the writer thread lowers its own scheduling priority (Linux nice, 0–10) while it keeps up: a run's threads
   * then preempt it at once, and its work fills the cores' idle time instead of delaying runs (quickjs back to back on
   * two cores: ~20 µs a run of ledger cost at 0, 2–11 µs at 10; docs/benchmarks.md). A lowered writer that falls
   * `queueLimit / 10` records behind (a machine busy on every core) hands what it has not written to a new thread at
   * the process's priority, which lowers itself again once its queue has stayed empty for a moment. Not above 10: at
   * 19 a writer starved by four busy threads took ~3 s to hand its queue back, and records were lost meanwhile; at 10,
   * 0.1–0.6 s, none lost. 0: never lowered. Not applied elsewhere than Linux. @default 10 @env
   * EXECGATE_FABRIC_LEDGER_WRITER_NICE
   */
  writerNice: number
  /**
   * Records heard and not yet written, at most; past it a run's record is lost, counted (`execgate_ledger_records_lost_total`)
   * and logged, and the run is not slowed. @default 10000 @env EXECGATE_FABRIC_LEDGER_QUEUE_LIMIT
   */
  queueLimit: number
  signing: {
    /**
     * The Ed25519 private key (PKCS#8 PEM file) that signs run receipts; empty: `<fabric.dataDir>/ledger-signing-key.pem`,
     * generated (mode 0600) at the first receipt. @default '' @env EXECGATE_FABRIC_LEDGER_SIGNING_KEY
     */
    key: string
  }
  retention: {
    /** Records older than this many days are removed (0: kept for ever). @default 0 @env EXECGATE_FABRIC_LEDGER_RETENTION_MAX_AGE_DAYS */
    maxAgeDays: number
    /**
     * Oldest records of a tenant are removed while the artifacts its records reference total more than this many
     * bytes (0: no limit). @default 0 @env EXECGATE_FABRIC_LEDGER_RETENTION_MAX_BYTES_PER_TENANT
     */
    maxBytesPerTenant: number
    /**
     * How often a running execgate applies the policy (0: only on `execgate ledger prune`). @default 60 @env
     * EXECGATE_FABRIC_LEDGER_RETENTION_INTERVAL_MINUTES */
    intervalMinutes: number
  }
}

export interface S3Config {
  /** The bucket of the ledger's `s3` blobs and `s3` workspaces. @default '' @env EXECGATE_FABRIC_S3_BUCKET */
  bucket: string
  /** Key prefix inside the bucket (`blobs/…` and `workspaces/…` go under it). @default 'execgate/' @env EXECGATE_FABRIC_S3_PREFIX */
  prefix: string
  /** An S3-compatible server's URL (MinIO, Ceph, s3rver); empty for AWS S3. @default '' @env EXECGATE_FABRIC_S3_ENDPOINT */
  endpoint: string
  /** @default 'us-east-1' @env EXECGATE_FABRIC_S3_REGION */
  region: string
  /**
   * Put the bucket in the path, not the host name (most S3-compatible servers need it). @default false @env
   * EXECGATE_FABRIC_S3_FORCE_PATH_STYLE */
  forcePathStyle: boolean
}

export const LEDGER_SCHEMA = {
  enabled: { doc: 'Record every execution in the artifact ledger', format: Boolean, default: true },
  store: { doc: 'Where ledger records live (auto: like fabric.store)', format: ['auto', ...FABRIC_STORE_KINDS], default: 'auto' },
  blobs: { doc: "Where the ledger's artifacts live", format: ['directory', 's3'], default: 'directory' },
  blobDir: { doc: 'Folder of the directory blob store (empty: <fabric.dataDir>/blobs)', format: String, default: '' },
  outputThresholdBytes: { doc: 'stdout/stderr at least this long are kept as artifacts', format: formats.nonNegativeInt, default: 1024 },
  writer: {
    doc: "Where the ledger hashes and writes: a worker thread, or inline on the caller's thread",
    format: ['thread', 'inline'],
    default: 'thread',
  },
  writerNice: {
    doc: 'How far the ledger writer thread lowers its priority (Linux nice, 0-10) while it keeps up; 0: never',
    format: formats.nice,
    default: 10,
  },
  queueLimit: {
    doc: 'Ledger records waiting to be written, at most (past it a record is lost, counted and logged)',
    format: formats.positiveInt,
    default: 10000,
  },
  signing: {
    key: {
      doc: 'Ed25519 PEM private key signing run receipts (empty: generated as <fabric.dataDir>/ledger-signing-key.pem)',
      format: String,
      default: '',
    },
  },
  retention: {
    maxAgeDays: { doc: 'Remove ledger records older than this (days; 0: never)', format: formats.nonNegativeInt, default: 0 },
    maxBytesPerTenant: {
      doc: "Remove a tenant's oldest records while its artifacts total more (bytes; 0: no limit)",
      format: formats.nonNegativeInt,
      default: 0,
    },
    intervalMinutes: {
      doc: 'How often a running execgate applies retention (0: only on ledger prune)',
      format: formats.nonNegativeInt,
      default: 60,
    },
  },
}

export const S3_SCHEMA = {
  bucket: { doc: 'Bucket of the s3 blob store and s3 workspaces', format: String, default: '' },
  prefix: { doc: 'Key prefix inside the bucket', format: String, default: 'execgate/' },
  endpoint: { doc: 'S3-compatible server URL (empty: AWS S3)', format: String, default: '' },
  region: { doc: 'Region of the bucket', format: String, default: 'us-east-1' },
  forcePathStyle: { doc: 'Bucket in the path instead of the host name', format: Boolean, default: false },
}
