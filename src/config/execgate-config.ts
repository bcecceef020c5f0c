import type { FilesystemAccess, Lane, NetworkAccess, PolicyLimit, PolicyOverrides } from '../core'
import type { AdapterOptionsConfig } from '../../adapters/option-schemas'
import type { FabricConfig } from './fabric-schema'
import type { EgressConfig } from './egress-schema'

/**
 * The whole configuration, validated once at start-up and frozen. Each key can be set in config/default.json,
 * config/<NODE_ENV>.json, a file given with `--config`, or its environment variable (the key in SCREAMING_SNAKE
 * case after `EXECGATE_`: `execution.adapter` → `EXECGATE_EXECUTION_ADAPTER`). Later sources win in that order.
 */
export interface ExecgateConfig {
  execution: {
    /**
     * The adapter every request runs on, or `auto` to let routing choose the cheapest capable one.
     * @default 'auto' @env EXECGATE_EXECUTION_ADAPTER
     */
    adapter: string
    /**
     * The adapter to switch to as soon as it becomes available (the placeholder design's future adapter);
     * empty for none. @default '' @env EXECGATE_EXECUTION_FUTURE_ADAPTER
     */
    futureAdapter: string
    /**
     * Adapters to create at start-up. Adapters not listed cost nothing.
     * @default ['placeholder','quickjs','monty','pyodide','process'] @env EXECGATE_EXECUTION_ENABLED (comma-separated)
     */
    enabled: string[]
    /**
     * Adapters to reroute to, in order, when the chosen one answers `unavailable` or its backend crashes; empty
     * for the routing order (cheapest capable first). A user's own error, timeout or memory_limit is never retried.
     * @default [] @env EXECGATE_EXECUTION_FALLBACK (comma-separated)
     */
    fallback: string[]
    /**
     * Extra time past the deadline an adapter gets to stop on its own before the service answers `timeout`
     * for it. @default 1000 @env EXECGATE_EXECUTION_GRACE_MS
     */
    graceMs: number
  }
  admission: {
    /**
     * Lane of a request that names none and whose tenant sets none (docs/architecture.md, Admission).
     * @default 'batch' @env EXECGATE_ADMISSION_DEFAULT_LANE
     */
    defaultLane: Lane
    /**
     * Share of each adapter's slots (`capabilities.concurrency`) only interactive runs may take, rounded up; batch
     * always keeps one slot. @default 0.5 @env EXECGATE_ADMISSION_INTERACTIVE_SHARE
     */
    interactiveShare: number
    /**
     * Batch runs at once across the in-process tiers (1 and 3), which share this machine's cores; 0 for one per
     * core. @default 0 @env EXECGATE_ADMISSION_IN_PROCESS_BATCH_RUNS
     */
    inProcessBatchRuns: number
    queue: {
      /**
       * Interactive runs that may wait per adapter; one more is refused (HTTP 429). @default 64 @env
       * EXECGATE_ADMISSION_QUEUE_INTERACTIVE */
      interactive: number
      /** Batch runs that may wait per adapter; one more is refused (HTTP 429). @default 256 @env EXECGATE_ADMISSION_QUEUE_BATCH */
      batch: number
    }
    /**
     * Retry hint (`retryAfterMs`, HTTP `Retry-After`) with a full queue or a shutdown. @default 1000 @env
     * EXECGATE_ADMISSION_RETRY_AFTER_MS */
    retryAfterMs: number
    /**
     * Per tenant: `{"acme": {"lane": "batch", "defaultLane": "interactive", "maxConcurrent": 4, "maxQueued": 16,
     * "cpuMsPerMinute": 60000, "egressRequestsPerMinute": 600, "egressBytesPerMinute": 104857600}}`; `lane` fixes the
     * lane, `defaultLane` applies when a request names none; the egress quotas refuse runs with network once spent.
     * @default {} @env EXECGATE_ADMISSION_TENANTS (JSON)
     */
    tenants: Record<
      string,
      {
        lane?: Lane
        defaultLane?: Lane
        maxConcurrent?: number
        maxQueued?: number
        cpuMsPerMinute?: number
        egressRequestsPerMinute?: number
        egressBytesPerMinute?: number
      }
    >
    /**
     * Agent-type profiles a request selects with `agentType`: `{"planning": {"maxConcurrent": 1, "maxWallTimeMs":
     * 1800000, "maxCpuTimeMs": 1800000, "maxMemoryMb": 2048}}`. @default research, planning, execution (the
     * fabric's table) @env EXECGATE_ADMISSION_AGENT_TYPES (JSON)
     */
    agentTypes: Record<string, { maxConcurrent?: number; maxWallTimeMs?: number; maxCpuTimeMs?: number; maxMemoryMb?: number }>
  }
  routing: {
    /**
     * Tiers from cheapest to dearest: 1 in-process, 3 WebAssembly module, 4 OS sandbox, 2 remote service,
     * 0 placeholder. @default [1,3,4,2,0] @env EXECGATE_ROUTING_TIER_ORDER (comma-separated)
     */
    tierOrder: number[]
    breaker: {
      /**
       * Backend failures (unavailable, backend crash) within `windowMs` that open an adapter's breaker. @default 3 @env
       * EXECGATE_ROUTING_BREAKER_FAILURES */
      failures: number
      /** @default 30000 @env EXECGATE_ROUTING_BREAKER_WINDOW_MS */
      windowMs: number
      /**
       * How long an open breaker skips its adapter before one request probes it. @default 10000 @env
       * EXECGATE_ROUTING_BREAKER_COOLDOWN_MS */
      cooldownMs: number
    }
  }
  server: {
    /**
     * Address `execgate serve` binds. Without API keys it binds loopback only, whatever this says. @default '127.0.0.1'
     * @env EXECGATE_SERVER_HOST */
    host: string
    /** @default 8787 @env EXECGATE_SERVER_PORT */
    port: number
    /**
     * API keys as `tenant=key` (comma-separated in the environment). `EXECGATE_API_KEYS` is read too. Keys are never
     * logged. @default [] @env EXECGATE_SERVER_API_KEYS
     */
    apiKeys: string[]
    /**
     * Per tenant: `{"acme": {"profile": "strict", "profiles": ["strict", "analytics"], "ratePerMinute": 120}}`. `profile`
     * is the tenant's starting policy, `profiles` the ones it may ask for (header `X-Execgate-Profile`).
     * @default {} @env EXECGATE_SERVER_TENANTS (JSON)
     */
    tenants: Record<string, { profile?: string; profiles?: string[]; ratePerMinute?: number }>
    /** Requests a minute per tenant unless the tenant sets its own. @default 600 @env EXECGATE_SERVER_RATE_PER_MINUTE */
    ratePerMinute: number
    /** @default 1048576 @env EXECGATE_SERVER_BODY_LIMIT_BYTES */
    bodyLimitBytes: number
    /**
     * On SIGTERM, how long runs in flight may finish before adapters are disposed. @default 10000 @env
     * EXECGATE_SERVER_SHUTDOWN_GRACE_MS */
    shutdownGraceMs: number
    /**
     * Finished runs the server keeps in memory for `GET /v1/activity` and the console's Activity page (a ring buffer:
     * the oldest goes when it is full; about 100 bytes a run). @default 10000 @env EXECGATE_SERVER_ACTIVITY_CAPACITY
     */
    activityCapacity: number
  }
  readiness: {
    /** Poll adapters on a schedule. @default true @env EXECGATE_READINESS_ENABLED */
    enabled: boolean
    /** node-cron expression (with seconds). @default every 30 s: '*\/30 * * * * *' @env EXECGATE_READINESS_SCHEDULE */
    schedule: string
    /** Longest a `checkAvailability` may take before it counts as a failure. @default 5000 @env EXECGATE_READINESS_TIMEOUT_MS */
    timeoutMs: number
    /** Consecutive failed checks before an adapter is marked unavailable. @default 2 @env EXECGATE_READINESS_UNHEALTHY_AFTER */
    unhealthyAfter: number
    /** Consecutive good checks before it is available again. @default 1 @env EXECGATE_READINESS_HEALTHY_AFTER */
    healthyAfter: number
    /**
     * Also run the enforcement canaries (an infinite loop, a memory bomb, an output flood, a fork bomb on OS
     * sandboxes) on every check; an adapter whose limit does not hold is marked degraded. @default false
     * @env EXECGATE_READINESS_CANARIES
     */
    canaries: boolean
  }
  security: {
    /**
     * Named policy profiles: each sets any policy field over `defaultPolicy` (it may loosen it: operators write
     * profiles, requests only tighten). Used per language and per tenant. @default {} @env EXECGATE_SECURITY_PROFILES (JSON)
     */
    profiles: Record<string, PolicyOverrides>
    /**
     * Profile applied to each language's requests, e.g. `{"python": "data-science"}`. @default {} @env
     * EXECGATE_SECURITY_LANGUAGE_PROFILES (JSON) */
    languageProfiles: Record<string, string>
    /**
     * Files a request sends: `read` lets its code read them (a fresh workspace holding only them, read-only) even
     * under a policy with `filesystem: none`; `refuse` refuses such a request before it runs, naming the profiles
     * that would allow it. @default 'read' @env EXECGATE_SECURITY_REQUEST_FILES
     */
    requestFiles: 'read' | 'refuse'
    /** The egress gateway's per-run caps and its test-only private-range exemption (docs/network.md). */
    egress: EgressConfig
    /**
     * Credentials the egress gateway adds to requests to their hosts, so code never holds them: name →
     * `{ env | file, hosts, header?, template? }` (docs/network.md). @default {} @env EXECGATE_SECURITY_SECRETS (JSON)
     */
    secrets: Record<string, { env?: string; file?: string; hosts: string[]; header?: string; template?: string }>
    /** The policy every request starts from; a request may only tighten it. */
    defaultPolicy: {
      /** @default 5000 @env EXECGATE_SECURITY_DEFAULT_POLICY_WALL_TIME_MS */
      wallTimeMs: number
      /** @default 5000 @env EXECGATE_SECURITY_DEFAULT_POLICY_CPU_TIME_MS */
      cpuTimeMs: number
      /** @default 128 @env EXECGATE_SECURITY_DEFAULT_POLICY_MEMORY_MB */
      memoryMb: number
      /** Cap on stdout + stderr + value. @default 65536 @env EXECGATE_SECURITY_DEFAULT_POLICY_OUTPUT_BYTES */
      outputBytes: number
      /** `none` or a comma-separated allow-list of hosts. @default 'none' @env EXECGATE_SECURITY_DEFAULT_POLICY_NETWORK */
      network: NetworkAccess
      /** `none`, `read_only` or `sandboxed`. @default 'none' @env EXECGATE_SECURITY_DEFAULT_POLICY_FILESYSTEM */
      filesystem: FilesystemAccess
      /** @default ['math','json','datetime'] @env EXECGATE_SECURITY_DEFAULT_POLICY_ALLOWED_IMPORTS */
      allowedImports: string[]
      hostCalls: {
        /** @default 100 @env EXECGATE_SECURITY_DEFAULT_POLICY_HOST_CALLS_MAX_COUNT */
        maxCount: number
        /** @default 2000 @env EXECGATE_SECURITY_DEFAULT_POLICY_HOST_CALLS_MAX_TOTAL_MS */
        maxTotalMs: number
      }
      /** @default 32 @env EXECGATE_SECURITY_DEFAULT_POLICY_MAX_PROCESSES */
      maxProcesses: number
      /** Rich outputs (images, tables, display items) per run. @default 10 @env EXECGATE_SECURITY_DEFAULT_POLICY_MAX_OUTPUTS */
      maxOutputs: number
      /** Bytes of all rich outputs of a run together. @default 2097152 @env EXECGATE_SECURITY_DEFAULT_POLICY_OUTPUTS_BYTES */
      outputsBytes: number
      /** Limits an adapter must enforce to run a request. @default [] @env EXECGATE_SECURITY_DEFAULT_POLICY_REQUIRED */
      required: PolicyLimit[]
    }
  }
  workspace: {
    /** Largest workspace file, read or written (bytes). @default 10485760 @env EXECGATE_WORKSPACE_MAX_FILE_BYTES */
    maxFileBytes: number
    /** Bytes a run's (or a session's) writable layer may hold. @default 52428800 @env EXECGATE_WORKSPACE_MAX_TOTAL_BYTES */
    maxTotalBytes: number
    /** Files a writable layer may hold. @default 1000 @env EXECGATE_WORKSPACE_MAX_FILES */
    maxFiles: number
  }
  sessions: {
    /**
     * Idle time after which a session's interpreter state and workspace are dropped (s). @default 600 @env
     * EXECGATE_SESSIONS_TTL_SECONDS */
    ttlSeconds: number
    /** Sessions each adapter keeps at once; a new one past this answers `unavailable`. @default 32 @env EXECGATE_SESSIONS_MAX_SESSIONS */
    maxSessions: number
  }
  /** Persistent sandboxes (docs/sandboxes.md): live environments an agent execs into, while this process runs. */
  sandboxes: {
    /**
     * Backend of a sandbox whose start names none: an enabled adapter with the `sandboxes` capability (docker,
     * process, shell), or `auto` for the cheapest by `routing.tierOrder`. @default 'auto' @env EXECGATE_SANDBOXES_ADAPTER
     */
    adapter: string
    /**
     * Live sandboxes one tenant may hold; one more is refused with EXECGATE_SANDBOX_LIMIT (HTTP 429). @default 4 @env
     * EXECGATE_SANDBOXES_MAX_PER_TENANT */
    maxPerTenant: number
    /**
     * A sandbox no call has reached for this long is stopped and its resources freed (ms). @default 600000 @env
     * EXECGATE_SANDBOXES_IDLE_TIMEOUT_MS */
    idleTimeoutMs: number
    /** The longest idle timeout a start may ask for (ms). @default 3600000 @env EXECGATE_SANDBOXES_MAX_IDLE_TIMEOUT_MS */
    maxIdleTimeoutMs: number
    /**
     * The filesystem access sandboxes grant to their own workspace, in place of the caller's profile's (a sandbox's
     * workspace is the sandbox's, never the host's); a start or an exec may tighten it. @default 'sandboxed'
     * @env EXECGATE_SANDBOXES_FILESYSTEM
     */
    filesystem: FilesystemAccess
    /**
     * Snapshot a sandbox's workspace into the ledger when its caller stops it, so `start({ from })` can take it up
     * again (docs/sandboxes.md#snapshots); nothing is taken with the ledger off. @default false
     * @env EXECGATE_SANDBOXES_SNAPSHOT_ON_STOP
     */
    snapshotOnStop: boolean
    /**
     * Snapshot a sandbox's workspace into the ledger when it reaches its idle timeout, so the work of a caller that
     * went away is not lost; nothing is taken with the ledger off. @default true @env EXECGATE_SANDBOXES_SNAPSHOT_ON_IDLE
     */
    snapshotOnIdle: boolean
    /**
     * Largest sandbox snapshot, in bytes of its files: a bigger one answers `EXECGATE_WORKSPACE_LIMIT` and nothing is
     * stored; a restore of a bigger archive is refused the same way. @default 268435456 (256 MiB)
     * @env EXECGATE_SANDBOXES_MAX_SNAPSHOT_BYTES
     */
    maxSnapshotBytes: number
  }
  /** Durable tasks, the artifact ledger, plans and bucket-backed workspaces (src/config/fabric-schema.ts). */
  fabric: FabricConfig
  /** Per-adapter options; see each adapter's page in docs/adapters/. */
  adapters: AdapterOptionsConfig
  log: {
    /** `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`. @default 'info' @env EXECGATE_LOG_LEVEL */
    level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  }
}
