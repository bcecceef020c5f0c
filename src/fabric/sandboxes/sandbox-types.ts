import type {
  ExecutionResult,
  FilesystemAccess,
  Lane,
  Language,
  Output,
  OutputStream,
  PolicyOverrides,
  SandboxFileEntry,
  SecurityPolicy,
  WorkspaceFile,
} from '../../core'

/** Who is asking: every call names a tenant, and a tenant only ever sees its own sandboxes. */
export interface SandboxCaller {
  /** @default 'local' (the library's and CLI's own tenant) */
  tenant?: string
  /** The policy profile (`security.profiles`) the tenant's sandboxes start from; else the default policy. */
  profile?: string
}

export interface SandboxStartOptions {
  /**
   * The backend: an enabled adapter with the `sandboxes` capability (`docker`, `process`, `shell`).
   * @default config `sandboxes.adapter` (`auto`: the cheapest such adapter by `routing.tierOrder`)
   */
  adapter?: string
  /** Tightens the sandbox's policy (the caller's profile, with `sandboxes.filesystem`); every exec runs under it. */
  policy?: PolicyOverrides
  /** Shorthand for `policy.wallTimeMs`: each exec's time limit. */
  timeoutMs?: number
  /** Shorthand for `policy.memoryMb`: each exec's memory limit. */
  memoryMb?: number
  /** Stopped after this long without a call (ms). @default config `sandboxes.idleTimeoutMs`, at most `sandboxes.maxIdleTimeoutMs` */
  idleTimeoutMs?: number
  /** Files placed in the workspace before the first exec: their content, or an artifact of the ledger by digest. */
  files?: readonly SandboxFile[]
  /**
   * A snapshot's id (the SHA-256 of its archive, `sb.snapshot()`): the workspace is restored from it, verified by
   * digest, before `files` are written. Only the tenant's own snapshots are found; any node of the fabric can restore.
   */
  from?: string
}

/** A snapshot of a sandbox's workspace: a content-addressed archive in the ledger's blob store. */
export interface SandboxSnapshot {
  /** The archive's SHA-256 (64 hexadecimal characters): what `start({ from })` takes. */
  id: string
  sandboxId: string
  adapter: string
  /** Files in the archive. */
  files: number
  /** The archive's size in bytes. */
  bytes: number
  /** ISO-8601. */
  createdAt: string
  /** Why it was taken: `requested` (`sb.snapshot()`), `stop` or `idle` (automatic). */
  reason: 'requested' | 'stop' | 'idle'
  /** Paths the backend could not read and left out (docker: another exec user's private file in /tmp). */
  skipped?: string[]
}

/** A file from the artifact ledger's blob store, named by its digest: only an artifact the caller's tenant can read. */
export interface ArtifactFile {
  path: string
  /** 64 hexadecimal characters (a `sha256:` prefix is allowed), as `GET /v1/artifacts/:sha256` names it. */
  sha256: string
}

/** A file for a sandbox's workspace: its content, or an artifact by digest. */
export type SandboxFile = WorkspaceFile | ArtifactFile

/** A file a sandbox saved to the ledger (`saveArtifact`). */
export interface SavedArtifact {
  /** Its workspace path. */
  path: string
  sha256: string
  size: number
  mediaType: string
}

/**
 * The upload store as sandboxes see it (src/app/fabric-wiring.ts): the bytes of the tenant's upload with this digest,
 * or undefined when the tenant uploaded none (whoever else did). Refuses one over the workspace's file limit before
 * reading it.
 */
export interface SandboxUploads {
  read(sha256: string, tenant: string): Promise<Buffer | undefined>
  /**
   * Where the tenant's upload is on this host (no size limit: nothing is copied), for backends that bind it in
   * (`AdapterSandbox.mountFile`); undefined when the tenant uploaded none.
   */
  locate?(sha256: string, tenant: string): Promise<{ hostPath: string; bytes: number } | undefined>
}

/**
 * The artifact ledger as sandboxes see it, passed in by src/app/fabric-wiring.ts (the sandbox layer never imports the
 * ledger). `read` answers exactly as `GET /v1/artifacts/:sha256` does for the tenant: an artifact none of its records
 * names is `EXECGATE_NOT_FOUND`, whoever else has it.
 */
export interface SandboxArtifactStore {
  read(sha256: string, tenant: string): Promise<Buffer>
  /** `snapshot: true` records the archive as the sandbox's snapshot rather than a file it saved. */
  save(file: {
    tenant: string
    sandboxId: string
    adapter: string
    path: string
    content: Buffer
    snapshot?: boolean
  }): Promise<SavedArtifact>
}

/** One exec: a shell command, or a program in a language the sandbox runs. */
export interface SandboxExecRequest {
  /** A bash command line (the same as `{ language: 'bash', code: command }`). */
  command?: string
  language?: Language
  code?: string
  stdin?: string
  /** Tighten the sandbox's policy for this exec only. */
  timeoutMs?: number
  memoryMb?: number
  policy?: PolicyOverrides
  /** Written into the workspace before the exec runs (content, or an artifact by digest). */
  files?: readonly SandboxFile[]
  traceId?: string
  /** @default config `admission.defaultLane` */
  lane?: Lane
  priority?: number
}

export interface SandboxExecOptions {
  /** Receives stdout/stderr as the exec produces them (docker and process; the native shell answers at the end). */
  onOutput?: (stream: OutputStream, chunk: string) => void
  /** Receives each rich output (a chart, a table) as the exec makes it, with its index in the result's `outputs`. */
  onRichOutput?: (output: Output, index: number) => void
  /** Aborting it cancels the exec (`cancelled`); the sandbox lives on. */
  signal?: AbortSignal
}

export interface SandboxInfo {
  id: string
  tenant: string
  adapter: string
  /** Languages an exec may use here. */
  languages: readonly Language[]
  /** ISO-8601 times. */
  createdAt: string
  lastUsedAt: string
  /** When it will be stopped if nothing calls it before. */
  expiresAt: string
  idleTimeoutMs: number
  /** Execs run so far. */
  execs: number
  /** The sandbox's policy: the ceiling of every exec. */
  policy: SecurityPolicy
  /** The latest snapshot of this sandbox, if one was taken. */
  lastSnapshot?: SandboxSnapshot
  /** The node that owns it (its registry id). */
  node?: string
  /** `lost` when its node is gone (killed, crashed): restore `lastSnapshot` with `start({ from })`. @default 'running' */
  state?: 'running' | 'lost'
}

/**
 * A live sandbox. Calls run one at a time, in order; `exec` never throws (every outcome is an `ExecutionResult`),
 * the file calls throw an `ExecgateError` when refused. Every method of a stopped sandbox answers
 * `EXECGATE_SANDBOX_STOPPED`.
 */
export interface Sandbox {
  readonly id: string
  readonly tenant: string
  readonly adapter: string
  info(): SandboxInfo
  exec(input: string | SandboxExecRequest, options?: SandboxExecOptions): Promise<ExecutionResult>
  /** `{ sha256 }` writes the tenant's upload, else an artifact of the ledger (the tenant's own; another's is `EXECGATE_NOT_FOUND`). */
  writeFile(path: string, content: string | Uint8Array | { sha256: string }): Promise<void>
  writeFiles(files: readonly SandboxFile[]): Promise<void>
  /** Throws `EXECGATE_WORKSPACE_NOT_FOUND` when there is no such file. */
  readFile(path: string): Promise<Buffer>
  /** The named files (or all of them) as workspace files: UTF-8 text where it is, base64 otherwise. */
  readFiles(paths?: readonly string[]): Promise<WorkspaceFile[]>
  listFiles(): Promise<SandboxFileEntry[]>
  /** True when a file was removed. */
  deleteFile(path: string): Promise<boolean>
  /**
   * Stores the file in the ledger's blob store, recorded as generated by this sandbox for its tenant, and answers its
   * digest. `EXECGATE_LEDGER_DISABLED` when the ledger is off; `EXECGATE_WORKSPACE_NOT_FOUND` when there is no file.
   */
  saveArtifact(path: string): Promise<SavedArtifact>
  /**
   * Archives the workspace's files (a deterministic tar) into the ledger's blob store, recorded with this sandbox as
   * its source; `start({ from: snapshot.id })` restores it on any node. Runs in turn with the other calls.
   * `EXECGATE_LEDGER_DISABLED` when the ledger is off.
   */
  snapshot(): Promise<SandboxSnapshot>
  stop(): Promise<void>
}

/** A sandbox as the registry keeps it: its info as last written by its owner, and where the owner is. */
export interface SandboxRecord {
  info: SandboxInfo
  /** The owner node's id. */
  node: string
  /** `running` until its owner stops it; a running record whose owner is gone is reported `lost`. */
  state: 'running' | 'stopped'
}

/** Marks a call passed on by another node (HTTP forwarding, a forwarded sandbox), so the owner never passes it on again. */
export const FORWARDED_HEADER = 'x-execgate-forwarded-by'

/** A node of the fabric, as its heartbeat says. */
export interface NodeRecord {
  id: string
  /**
   * Where other nodes forward a sandbox's requests (`fabric.nodeUrl`, else the address `serve` listens on); absent for
   * a library with no server. */
  url?: string
  startedAt: string
  heartbeatAt: string
  /** What the node shows of itself (adapters, slots, queues, sandboxes): GET /v1/adapters's `nodes`. */
  status?: unknown
}

/** Where a sandbox is, seen from this node. */
export type SandboxWhereabouts =
  | { kind: 'here'; sandbox: Sandbox }
  | { kind: 'node'; record: SandboxRecord; node: NodeRecord }
  | { kind: 'lost'; record: SandboxRecord }
  | { kind: 'stopped'; record: SandboxRecord }
  | { kind: 'missing' }

/** `execgate.sandboxes`: HTTP, MCP and the CLI call the same. */
export interface SandboxService {
  start(options?: SandboxStartOptions, caller?: SandboxCaller): Promise<Sandbox>
  /** The caller's sandbox on this node; another tenant's id answers undefined, exactly like a missing one. */
  get(id: string, caller?: SandboxCaller): Sandbox | undefined
  /**
   * The caller's sandbox on any node: this node's, or another live node's reached through its HTTP API (every call
   * forwarded to the owner). Undefined for a missing, stopped or another tenant's sandbox; throws
   * `EXECGATE_SANDBOX_LOST` (naming its last snapshot) when its node is gone.
   */
  find(id: string, caller?: SandboxCaller): Promise<Sandbox | undefined>
  list(caller?: SandboxCaller): SandboxInfo[]
  /** True when there was such a sandbox (of the caller's) to stop. */
  stop(id: string, caller?: SandboxCaller): Promise<boolean>
  /** Removes what sandboxes of a crashed execgate left (run once before the first start; `execgate serve` runs it at start). */
  sweep(): Promise<number>
  /** Stops every live sandbox, or only those of the given tenants (`reason` is what their calls are told). */
  stopAll(filter?: { tenants?: readonly string[]; reason?: string }): Promise<void>
  /** Stops every sandbox and refuses new ones (`execgate.dispose()` calls it). */
  close(): Promise<void>
  /** This node's id in the sandbox registry. */
  readonly nodeId: string
  /** Where other nodes reach this one and what it shows of itself; starts its heartbeat (`execgate serve` calls it). */
  advertise(url: string, status?: () => unknown): Promise<void>
  /** Where the caller's sandbox is: here, on another live node, lost with its node, stopped, or missing. */
  locate(id: string, caller?: SandboxCaller): Promise<SandboxWhereabouts>
  /** The caller's sandboxes on every node (`state: 'lost'` for those of a node that is gone). */
  listEverywhere(caller?: SandboxCaller): Promise<SandboxInfo[]>
  /** Forgets a lost sandbox's record; false when it is not lost. */
  forgetLost(id: string, caller?: SandboxCaller): Promise<boolean>
  /** The live nodes, as their heartbeats say. */
  nodes(): Promise<NodeRecord[]>
}

/** The `sandboxes` config keys. */
export interface SandboxSettings {
  adapter: string
  maxPerTenant: number
  idleTimeoutMs: number
  maxIdleTimeoutMs: number
  filesystem: FilesystemAccess
  /** Snapshot the workspace when the caller stops a sandbox (the ledger on). */
  snapshotOnStop: boolean
  /** Snapshot the workspace when a sandbox reaches its idle timeout (the ledger on). */
  snapshotOnIdle: boolean
  /** Largest snapshot, in bytes of its files: a bigger one answers `EXECGATE_WORKSPACE_LIMIT` and nothing is stored. */
  maxSnapshotBytes: number
}
