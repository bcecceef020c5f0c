import { FILESYSTEM_ACCESS } from '../core'
import { formats } from './formats'
import { FABRIC_STORE_KINDS, type FabricStoreKind } from './store-kinds'
import { LEDGER_SCHEMA, S3_SCHEMA, type LedgerConfig, type S3Config } from './ledger-schema'

/**
 * The execution fabric's keys (`fabric.*`): durable tasks and their stores, the artifact ledger (its own keys in
 * src/config/ledger-schema.ts), the bucket, bucket-backed workspaces and plans. Composed into the schema by
 * src/config/schema.ts; docs/tasks.md, docs/ledger.md and docs/plans.md explain each choice.
 */
export interface FabricConfig {
  /**
   * Where durable tasks live: `sqlite`, the embedded store, or `redis`, shared by `execgate serve` and any number of
   * `execgate worker` processes through BullMQ (docs/tasks.md). @default 'sqlite' @env EXECGATE_FABRIC_STORE
   */
  store: FabricStoreKind
  /** The Redis of the `redis` store. @default 'redis://127.0.0.1:6379' @env EXECGATE_FABRIC_REDIS_URL */
  redisUrl: string
  /**
   * Prefix of the `redis` store's keys and BullMQ queue, so deployments can share a Redis. @default 'execgate' @env
   * EXECGATE_FABRIC_REDIS_PREFIX */
  redisPrefix: string
  /**
   * How long a worker of the `redis` store may go without renewing its lease on a run before the run counts as
   * lost (a crash, a kill -9) and goes to another worker by the task's retry policy. @default 30000 @env EXECGATE_FABRIC_LEASE_MS
   */
  leaseMs: number
  /**
   * The URL other nodes forward a sandbox's requests to (docs/sandboxes.md#many-nodes); empty: the address `execgate
   * serve` listens on (set it when that is not reachable from the other nodes). @default '' @env EXECGATE_FABRIC_NODE_URL
   */
  nodeUrl: string
  /**
   * How often a node writes its heartbeat to the sandbox registry (ms); after three missed beats its sandboxes are
   * reported `lost`. @default 2000 @env EXECGATE_FABRIC_NODE_HEARTBEAT_MS
   */
  nodeHeartbeatMs: number
  /** Whether `execgate serve` runs tasks too, or only accepts them for workers. @default true @env EXECGATE_FABRIC_SERVE_RUNS_TASKS */
  serveRunsTasks: boolean
  /**
   * Folder of the embedded stores (`tasks.sqlite`, `ledger.sqlite`, the ledger's `blobs/`), created when missing.
   * @default '.execgate' @env EXECGATE_FABRIC_DATA_DIR */
  dataDir: string
  /** Tasks one process runs at once. @default 4 @env EXECGATE_FABRIC_CONCURRENCY */
  concurrency: number
  /** The artifact ledger (docs/ledger.md). */
  ledger: LedgerConfig
  /** The S3-compatible bucket of the ledger's `s3` blobs and of `s3` workspaces. */
  s3: S3Config
  /**
   * Where session workspaces live: `memory` (this process) or `s3` (`fabric.s3`, shared by nodes). @default 'memory'
   * @env EXECGATE_FABRIC_WORKSPACES */
  workspaces: 'memory' | 's3'
  /** Files uploaded once and named by digest (`PUT /v1/files`, `execgate run --file`; docs/data.md). */
  files: {
    /**
     * Folder of the upload store's blobs by SHA-256 (this node's copies when they are shared through the ledger's
     * bucket) and, unless `fabric.store` is `redis`, their index; empty for `<fabric.dataDir>/uploads`. @default ''
     * @env EXECGATE_FABRIC_FILES_DIR */
    dir: string
    /**
     * Bytes of uploads one tenant may hold; an upload past it is refused (HTTP 413). @default 1073741824 @env
     * EXECGATE_FABRIC_FILES_QUOTA_BYTES */
    quotaBytes: number
    /**
     * Where the ledger's blobs are in a bucket (so every upload is there): bytes of uploads' copies this node keeps,
     * least recently used removed first, and copies of uploads no tenant holds removed at once; 0 keeps every copy.
     * @default 10737418240 @env EXECGATE_FABRIC_FILES_LOCAL_COPY_BYTES */
    localCopyBytes: number
  }
  /** Plans: DAGs of steps run as tasks, revised by a reflector when a step fails (docs/plans.md). */
  plans: {
    /**
     * Revisions the reflector may make to one plan, refused ones included; a plan may ask for fewer. @default 3 @env
     * EXECGATE_FABRIC_PLANS_MAX_REVISIONS */
    maxRevisions: number
    /** Steps one plan (or one revision of it) may have. @default 50 @env EXECGATE_FABRIC_PLANS_MAX_STEPS */
    maxSteps: number
    /**
     * Workspace access every step's runs get over the caller's policy, so a step reads its dependencies' outputs
     * (`steps/<id>/…`) and writes files for its dependents: the step's own fresh workspace, nothing else. `none`
     * grants nothing (steps then need a policy that allows files). @default 'sandboxed' @env EXECGATE_FABRIC_PLANS_STEP_WORKSPACE_ACCESS
     */
    stepWorkspaceAccess: 'none' | 'read_only' | 'sandboxed'
    /**
     * Where steps' workspaces live for plans that do not say: `memory` (the process running the step) or `s3` (each
     * step's own prefix in `fabric.s3`'s bucket, kept after the run for the operator and any node; docs/plans.md).
     * @default 'memory' @env EXECGATE_FABRIC_PLANS_WORKSPACES
     */
    workspaces: 'memory' | 's3'
    reflector: {
      /**
       * Bedrock model id (or inference profile) of the reflector; empty: no reflector, a failed step fails its plan.
       * @default '' @env EXECGATE_FABRIC_PLANS_REFLECTOR_MODEL_ID */
      modelId: string
      /** @default 'us-east-1' @env EXECGATE_FABRIC_PLANS_REFLECTOR_REGION */
      region: string
      /**
       * A Converse endpoint instead of AWS's (a plain http:// one is spoken to over HTTP/1.1). @default '' @env
       * EXECGATE_FABRIC_PLANS_REFLECTOR_ENDPOINT */
      endpoint: string
      /** Longest answer asked of the model. @default 4096 @env EXECGATE_FABRIC_PLANS_REFLECTOR_MAX_TOKENS */
      maxTokens: number
    }
  }
}

export const FABRIC_SCHEMA = {
  store: { doc: 'Where durable tasks and plans live', format: [...FABRIC_STORE_KINDS], default: 'sqlite' },
  redisUrl: { doc: 'The Redis of the redis task store', format: String, default: 'redis://127.0.0.1:6379' },
  redisPrefix: { doc: "Prefix of the redis store's keys and queue", format: String, default: 'execgate' },
  leaseMs: {
    doc: "A worker's lease on a run before it counts as lost (ms); also the bound of the plan driver and revision leases (5 s)",
    format: formats.positiveInt,
    default: 30000,
  },
  nodeUrl: { doc: "The URL other nodes forward a sandbox's requests to (empty: the listening address)", format: String, default: '' },
  nodeHeartbeatMs: {
    doc: 'How often a node writes its heartbeat to the sandbox registry (ms)',
    format: formats.positiveInt,
    default: 2000,
  },
  serveRunsTasks: { doc: 'Whether execgate serve runs tasks too', format: Boolean, default: true },
  dataDir: { doc: 'Folder of the embedded task store and artifact ledger', format: String, default: '.execgate' },
  concurrency: { doc: 'Tasks one process runs at once', format: formats.positiveInt, default: 4 },
  ledger: LEDGER_SCHEMA,
  s3: S3_SCHEMA,
  workspaces: { doc: 'Where session workspaces live', format: ['memory', 's3'], default: 'memory' },
  files: {
    dir: { doc: 'Folder of the upload store (empty: <fabric.dataDir>/uploads)', format: String, default: '' },
    quotaBytes: { doc: 'Bytes of uploaded files one tenant may hold', format: formats.positiveInt, default: 1024 ** 3 },
    localCopyBytes: {
      doc: "With the ledger's blobs in a bucket: bytes of uploads' copies this node keeps (least recently used go first; 0: all)",
      format: formats.nonNegativeInt,
      default: 10 * 1024 ** 3,
    },
  },
  plans: {
    maxRevisions: { doc: 'Revisions the reflector may make to one plan (refused ones count)', format: formats.nonNegativeInt, default: 3 },
    maxSteps: { doc: 'Steps one plan may have', format: formats.positiveInt, default: 50 },
    stepWorkspaceAccess: {
      doc: "Workspace access granted to plan steps' own fresh workspace",
      format: [...FILESYSTEM_ACCESS],
      default: 'sandboxed',
    },
    workspaces: { doc: "Where plan steps' workspaces live unless a plan says", format: ['memory', 's3'], default: 'memory' },
    reflector: {
      modelId: { doc: 'Bedrock model id of the reflector (empty: none)', format: String, default: '' },
      region: { doc: "The reflector's AWS region", format: String, default: 'us-east-1' },
      endpoint: { doc: 'A Converse endpoint instead of AWS (empty: AWS)', format: String, default: '' },
      maxTokens: { doc: 'Longest reflector answer (tokens)', format: formats.positiveInt, default: 4096 },
    },
  },
}
