import { FILESYSTEM_ACCESS, LANES } from '../core'
import { ADAPTER_OPTION_SCHEMAS } from '../../adapters/option-schemas'
import { formats } from './formats'
import { FABRIC_SCHEMA } from './fabric-schema'
import { EGRESS_SCHEMA } from './egress-schema'

export type { ExecgateConfig } from './execgate-config'

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/** The convict schema. `env` names are filled in by `withEnvironmentNames` so they cannot drift from the keys. */
export const CONFIG_SCHEMA = {
  execution: {
    adapter: { doc: 'Adapter for every request, or auto', format: formats.adapterName, default: 'auto' },
    futureAdapter: { doc: 'Adapter to switch to when it becomes available', format: formats.optionalAdapterName, default: '' },
    enabled: {
      doc: 'Adapters created at start-up',
      format: formats.adapterNameList,
      default: ['placeholder', 'quickjs', 'monty', 'pyodide', 'shell', 'process'],
    },
    fallback: { doc: 'Adapters to reroute to when the chosen one is unavailable or crashes', format: formats.adapterNameList, default: [] },
    graceMs: { doc: 'Time past the deadline before the service answers timeout', format: formats.nonNegativeInt, default: 1000 },
  },
  admission: {
    defaultLane: { doc: 'Lane of a request that names none', format: [...LANES], default: 'batch' },
    interactiveShare: { doc: "Share of each adapter's slots reserved for interactive runs", format: formats.share, default: 0.5 },
    inProcessBatchRuns: { doc: 'Batch runs at once on in-process tiers (0: one per core)', format: formats.nonNegativeInt, default: 0 },
    queue: {
      interactive: { doc: 'Interactive runs that may wait per adapter', format: formats.nonNegativeInt, default: 64 },
      batch: { doc: 'Batch runs that may wait per adapter', format: formats.nonNegativeInt, default: 256 },
    },
    retryAfterMs: { doc: 'Retry hint with a full queue or a shutdown (ms)', format: formats.positiveInt, default: 1000 },
    tenants: { doc: 'Per-tenant lane and quotas (JSON object)', format: Object, default: {} },
    agentTypes: {
      doc: 'Agent-type profiles: concurrent runs, time and memory caps (JSON object)',
      format: Object,
      // The execution fabric's table: research 2 cores, 4 GB, 1 h; planning 1 core, 2 GB, 30 min; execution 4 cores, 8 GB, 4 h.
      default: {
        research: { maxConcurrent: 2, maxMemoryMb: 4096, maxWallTimeMs: 3_600_000, maxCpuTimeMs: 3_600_000 },
        planning: { maxConcurrent: 1, maxMemoryMb: 2048, maxWallTimeMs: 1_800_000, maxCpuTimeMs: 1_800_000 },
        execution: { maxConcurrent: 4, maxMemoryMb: 8192, maxWallTimeMs: 14_400_000, maxCpuTimeMs: 14_400_000 },
      },
    },
  },
  routing: {
    tierOrder: { doc: 'Tiers from cheapest to dearest', format: formats.tierOrder, default: [1, 3, 4, 2, 0] },
    breaker: {
      failures: { doc: 'Backend failures in the window that open a breaker', format: formats.positiveInt, default: 3 },
      windowMs: { doc: 'Breaker failure window (ms)', format: formats.positiveInt, default: 30_000 },
      cooldownMs: { doc: 'Open breaker cooldown before a probe (ms)', format: formats.positiveInt, default: 10_000 },
    },
  },
  server: {
    host: { doc: 'Address execgate serve binds', format: String, default: '127.0.0.1' },
    port: { doc: 'Port execgate serve binds', format: 'port', default: 8787 },
    apiKeys: { doc: 'API keys as tenant=key', format: formats.stringList, default: [] },
    tenants: { doc: 'Per-tenant profile, allowed profiles and rate (JSON object)', format: Object, default: {} },
    ratePerMinute: { doc: 'Requests a minute per tenant', format: formats.positiveInt, default: 600 },
    bodyLimitBytes: { doc: 'Largest request body (bytes)', format: formats.positiveInt, default: 1024 * 1024 },
    shutdownGraceMs: { doc: 'Time for runs in flight on SIGTERM (ms)', format: formats.nonNegativeInt, default: 10_000 },
    activityCapacity: { doc: 'Finished runs kept in memory for GET /v1/activity', format: formats.positiveInt, default: 10_000 },
  },
  readiness: {
    enabled: { doc: 'Poll adapter availability on a schedule', format: Boolean, default: true },
    schedule: { doc: 'node-cron schedule of the checks', format: formats.cronSchedule, default: '*/30 * * * * *' },
    timeoutMs: { doc: 'Availability check time limit (ms)', format: formats.positiveInt, default: 5000 },
    unhealthyAfter: { doc: 'Failed checks before unavailable', format: formats.positiveInt, default: 2 },
    healthyAfter: { doc: 'Good checks before available again', format: formats.positiveInt, default: 1 },
    canaries: { doc: 'Run enforcement canaries with every check', format: Boolean, default: false },
  },
  security: {
    profiles: { doc: 'Named policy profiles (JSON object)', format: Object, default: {} },
    languageProfiles: { doc: 'Profile per language (JSON object)', format: Object, default: {} },
    requestFiles: {
      doc: 'Whether code may read the files its own request sent (read) or such requests are refused (refuse)',
      format: ['read', 'refuse'],
      default: 'read',
    },
    egress: EGRESS_SCHEMA,
    secrets: { doc: 'Secrets the egress gateway adds to requests (JSON object)', format: Object, default: {} },
    defaultPolicy: {
      wallTimeMs: { doc: 'Wall-clock limit (ms)', format: formats.positiveInt, default: 5000 },
      cpuTimeMs: { doc: 'CPU-time limit (ms)', format: formats.positiveInt, default: 5000 },
      memoryMb: { doc: 'Memory limit (MiB)', format: formats.positiveInt, default: 128 },
      outputBytes: { doc: 'Output cap (bytes)', format: formats.positiveInt, default: 65536 },
      network: { doc: 'none, or allowed hosts', format: formats.network, default: 'none' },
      filesystem: { doc: 'Workspace access', format: [...FILESYSTEM_ACCESS], default: 'none' },
      allowedImports: { doc: 'Modules code may import', format: formats.stringList, default: ['math', 'json', 'datetime'] },
      hostCalls: {
        maxCount: { doc: 'Host calls per run', format: formats.nonNegativeInt, default: 100 },
        maxTotalMs: { doc: 'Total host-call time per run (ms)', format: formats.nonNegativeInt, default: 2000 },
      },
      maxProcesses: { doc: 'Processes per run (OS sandboxes)', format: formats.positiveInt, default: 32 },
      maxOutputs: { doc: 'Rich outputs (images, tables) per run', format: formats.nonNegativeInt, default: 10 },
      outputsBytes: { doc: 'Bytes of all rich outputs of a run', format: formats.nonNegativeInt, default: 2 * 1024 * 1024 },
      required: { doc: 'Limits an adapter must enforce', format: formats.limitList, default: [] },
    },
  },
  workspace: {
    maxFileBytes: { doc: 'Largest workspace file (bytes)', format: formats.positiveInt, default: 10 * 1024 * 1024 },
    maxTotalBytes: { doc: 'Bytes a writable workspace layer may hold', format: formats.positiveInt, default: 50 * 1024 * 1024 },
    maxFiles: { doc: 'Files a writable workspace layer may hold', format: formats.positiveInt, default: 1000 },
  },
  sessions: {
    ttlSeconds: { doc: 'Idle time before a session is dropped (s)', format: formats.positiveInt, default: 600 },
    maxSessions: { doc: 'Sessions each adapter keeps at once', format: formats.positiveInt, default: 32 },
  },
  sandboxes: {
    adapter: { doc: 'Backend of a sandbox whose start names none, or auto', format: formats.adapterName, default: 'auto' },
    maxPerTenant: { doc: 'Live sandboxes one tenant may hold', format: formats.positiveInt, default: 4 },
    idleTimeoutMs: { doc: 'Idle time before a sandbox is stopped (ms)', format: formats.positiveInt, default: 600_000 },
    maxIdleTimeoutMs: { doc: 'Longest idle timeout a start may ask for (ms)', format: formats.positiveInt, default: 3_600_000 },
    filesystem: { doc: 'Filesystem access of sandboxes to their own workspace', format: [...FILESYSTEM_ACCESS], default: 'sandboxed' },
    snapshotOnStop: { doc: "Snapshot a sandbox's workspace when its caller stops it", format: Boolean, default: false },
    snapshotOnIdle: { doc: "Snapshot a sandbox's workspace when it reaches its idle timeout", format: Boolean, default: true },
    maxSnapshotBytes: { doc: 'Largest sandbox snapshot (bytes of its files)', format: formats.positiveInt, default: 256 * 1024 * 1024 },
  },
  fabric: FABRIC_SCHEMA,
  adapters: ADAPTER_OPTION_SCHEMAS,
  log: {
    level: { doc: 'Log level', format: [...LOG_LEVELS], default: 'info' },
  },
}

/** `execution.adapter` → `EXECGATE_EXECUTION_ADAPTER`. */
export function environmentName(path: readonly string[]): string {
  return ['EXECGATE', ...path.map((part) => part.replace(/([a-z0-9])([A-Z])/g, '$1_$2'))].join('_').toUpperCase()
}

/** Adds an `env` name to every leaf of a convict schema, derived from its key path. */
export function withEnvironmentNames<T extends object>(schema: T, path: string[] = []): T {
  const out: Record<string, unknown> = {}
  for (const [key, node] of Object.entries(schema)) {
    const here = [...path, key]
    const isLeaf = typeof node === 'object' && node !== null && 'default' in node
    if (isLeaf && 'env' in node && node.env !== environmentName(here)) {
      // Adapters write their env var beside each option (adapters/<name>/options.ts); a name that is not the one
      // derived from the key would be a second spelling of the same setting.
      throw new Error(`${here.join('.')}: env ${String(node.env)} must be ${environmentName(here)}`)
    }
    out[key] = isLeaf ? { ...node, env: environmentName(here) } : withEnvironmentNames(node as object, here)
  }
  return out as T
}
