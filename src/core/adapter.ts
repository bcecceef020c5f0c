import type {
  FileMount,
  AdapterCapabilities,
  Availability,
  ExecutionRequest,
  ExecutionResult,
  Lane,
  Output,
  Language,
  RunProvenance,
  SecurityPolicy,
  Tier,
  ValidationReport,
  WorkspaceFile,
} from './types'

/** A function the host offers to sandboxed code, with a JSON schema for its arguments. */
export interface HostFunctionSpec {
  name: string
  description: string
  /** JSON Schema of the positional arguments, as an array schema (`{type: 'array', items: [...]}`) or object. */
  parameters: Record<string, unknown>
}

/**
 * The host functions of one run. `call` validates arguments, counts the call against the policy's budget and
 * records it; it rejects with an `ExecgateError` (code `EXECGATE_HOST_CALL_*`) when the call is refused.
 */
export interface HostFunctions {
  list(): readonly HostFunctionSpec[]
  has(name: string): boolean
  call(name: string, args: readonly unknown[]): Promise<unknown>
}

export type OutputStream = 'stdout' | 'stderr'

/** What the service hands an adapter for one run. Adapters never read config or other adapters. */
export interface ExecutionContext {
  readonly traceId: string
  /** The resolved policy: limits the adapter must apply. */
  readonly policy: SecurityPolicy
  /** Aborted when the caller cancels; adapters stop the run and answer `cancelled`. */
  readonly signal: AbortSignal
  /**
   * Whether `signal` was aborted, without making it: the service makes a run's AbortSignal on first use (one costs
   * Node 20 several µs, more than a microsecond engine's whole run). Absent (a context built by hand): `signal.aborted`.
   */
  readonly isAborted?: () => boolean
  /**
   * Calls `listener` once when the run is aborted, without making `signal`; returns the way to stop listening.
   * Absent (a context built by hand): listen on `signal`.
   */
  readonly onAbort?: (listener: () => void) => () => void
  /** `performance.now()` value by which the run must be over. */
  readonly deadline: number
  /** Host functions for sandboxed code; absent when the run has none. */
  readonly hostFunctions?: HostFunctions
  /** Receives output as it is produced, for streaming callers. */
  readonly onOutput?: (stream: OutputStream, chunk: string) => void
  /**
   * Receives each rich output (an image, a table, a `display()` item) when the code makes it, already checked and
   * within the policy's limits, with its index in the result's `outputs`; adapters whose runner reports outputs only
   * at the end do not call it (the streaming surfaces then send them from the result).
   */
  readonly onRichOutput?: (output: Output, index: number) => void
  /** Files to place in the workspace (already validated paths). */
  readonly files?: readonly WorkspaceFile[]
  /** Uploaded files to bind in read-only, on adapters with `capabilities.fileMounts` (paths already validated). */
  readonly mounts?: readonly FileMount[]
  /**
   * For adapters that wait for backend capacity (a warm interpreter) before the code starts: `pauseClock` when the
   * wait begins, `restartClock` when the code starts. The wait stays in the result's duration but not in the code's
   * time limit; `restartClock` returns the new deadline.
   */
  readonly pauseClock?: () => void
  readonly restartClock?: () => number
  /**
   * The run's way out, when its policy allows any network: the egress gateway's forward proxy (HTTP, and CONNECT
   * for HTTPS) on a unix socket only this run's connections reach. OS sandboxes bind it in; in-process engines get
   * the `http_request` host function instead.
   */
  readonly egress?: EgressAccess
}

/** A run's access to the egress gateway's proxy: started on first ask, closed when the run ends. */
export interface EgressAccess {
  /**
   * `placement.socketPath`: where the proxy listens, for a sandbox that outlives the run (a persistent docker
   * sandbox's container had its folder bound in when it was made, so each exec's socket must appear inside it). The
   * folder is the caller's; the socket is removed when the run ends. Without it the gateway picks a fresh path.
   */
  endpoint(placement?: EgressPlacement): Promise<EgressEndpoint>
}

export interface EgressPlacement {
  /** Host path of the socket to listen on; its folder exists, the path itself does not (or is a stale socket). */
  readonly socketPath: string
}

/** The egress gateway's proxy for one run (docs/network.md). */
export interface EgressEndpoint {
  /** Host path of the unix socket the proxy listens on for this run. */
  readonly socketPath: string
  /** PEM of the CA the gateway re-terminates TLS with, for hosts that get a secret; the sandbox trusts it. */
  readonly caCertificatePem?: string
  /** Host path of a PEM file with the system's CAs and that CA, to bind into the sandbox as its trust store. */
  readonly caBundlePath?: string
}

/** What a request needs beyond its code, for `canRun`. */
export interface RunNeeds {
  /** The request keeps a session. */
  session?: boolean
  /** The code names host functions. */
  hostFunctions?: boolean
  /** Bytes of input the run starts with (its workspace files and stdin), for cost estimates. */
  inputBytes?: number
}

/** The contract every backend implements. `execute` never rejects: every outcome is an `ExecutionResult`. */
export interface CodeExecutionAdapter {
  readonly name: string
  readonly capabilities: AdapterCapabilities
  execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult>
  /**
   * Optional: the same run as `execute`, under the same rules, for adapters that often finish on the calling thread
   * (monty's inline runs): the result itself when the run is over by the time it returns, else a promise. The
   * service calls it instead of `execute` when present; a result given on the spot spares the run the promises and
   * turns of the event loop of waiting for it (a sixth of a trivial monty run's cost through the service).
   */
  executeNow?(request: ExecutionRequest, context: ExecutionContext): ExecutionResult | Promise<ExecutionResult>
  validate(code: string, language: Language): Promise<ValidationReport>
  supportedLanguages(): readonly Language[]
  checkAvailability(): Promise<Availability>
  /**
   * Optional: whether this adapter can run the code at all, decided without running it (a language subset such as
   * monty's). Routing moves a request on to the next capable adapter when the answer is no.
   */
  canRun?(code: string, language: Language, needs?: RunNeeds): { ok: boolean; reason?: string }
  /**
   * Optional: how long this adapter expects the code to take, in ms, from the code and its input size. When more
   * than one capable adapter gives an estimate, routing picks the lowest (an interpreter cheap to start but slow
   * per byte against an OS sandbox dear to start but fast per byte). Must be cheap and must not run the code.
   */
  estimateMs?(code: string, language: Language, needs?: RunNeeds): number | undefined
  /** Optional, on adapters with the `sessions` capability: ends a session; true when there was one. */
  closeSession?(sessionId: string): Promise<boolean>
  /**
   * Optional, on adapters whose session state is bytes that can live outside the process (monty's REPL dump): the
   * session's state as its last call left it, or undefined when this adapter holds none. The fabric saves it after
   * each call, so another node can take the session over when this one dies (docs/sandboxes.md#sessions-across-nodes).
   */
  exportSession?(sessionId: string): Promise<Uint8Array | undefined>
  /** Optional, beside `exportSession`: takes a session's state saved by another process as if it had kept it itself. */
  importSession?(sessionId: string, state: Uint8Array): Promise<void>
  /**
   * Optional: makes the adapter able to answer without a cold start (a worker started and its module loaded, an
   * interpreter loaded). `createExecgate()` awaits it on every enabled adapter before it resolves. Resolves once
   * the adapter can answer; rejects with the reason it cannot (the adapter stays usable, cold). Safe to call twice.
   */
  warmUp?(): Promise<void>
  /** Optional, beside `warmUp`: true when a run now would not pay a cold start. */
  isWarm?(): boolean
  /**
   * Optional, on adapters with the `sandboxes` capability: opens a persistent sandbox (a container, a directory and
   * a uid, a workspace in memory) that later execs run in. The SandboxManager (src/fabric/sandboxes) owns ids,
   * tenants, caps and idle timeouts; the adapter owns the backend. Throws an `ExecgateError` when it cannot open one.
   */
  openSandbox?(options: SandboxOpenOptions): Promise<AdapterSandbox>
  /**
   * Optional, beside `openSandbox`: removes what sandboxes of an execgate process that is no longer running left
   * behind (a kill -9: containers, directories, processes), never a live process's. Resolves to how many it removed.
   */
  sweepSandboxes?(): Promise<number>
  /** Releases workers, sessions and handles. Safe to call twice. */
  dispose(): Promise<void>
}

/** What an adapter is given to open a sandbox. */
export interface SandboxOpenOptions {
  /** The manager's id for the sandbox: names its container, directory or log lines. */
  readonly id: string
  /**
   * The sandbox's own policy: the ceiling every exec runs under (an exec's context may only be tighter). Limits a
   * backend sets once for the sandbox's life (a container's memory and pids cgroup) come from here.
   */
  readonly policy: SecurityPolicy
  /** Bounds on what the workspace may hold, for backends that keep it in this process's memory. */
  readonly limits: { readonly maxFileBytes: number; readonly maxTotalBytes: number; readonly maxFiles: number }
}

/** One file of a sandbox's workspace. */
export interface SandboxFileEntry {
  /** Relative to the workspace root, `/`-separated. */
  path: string
  size: number
}

/**
 * A sandbox an adapter keeps open: its workspace and files live as long as it does. Paths given to it are already
 * normalised workspace paths (`normalizeWorkspacePath`); the caller runs one call at a time on it.
 */
export interface AdapterSandbox {
  readonly id: string
  /** The languages an exec may use here (a shell command is `bash`). */
  readonly languages: readonly Language[]
  /**
   * Runs one command or program in the sandbox with the context's limits, starting in the workspace root: files it
   * writes stay for the next exec, while its working directory, environment and processes end with it. Never
   * rejects: every outcome is an `ExecutionResult`.
   */
  exec(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult>
  /** Writes (creating folders as needed) or replaces a file; throws `EXECGATE_WORKSPACE_*` when refused. */
  writeFile(path: string, content: Uint8Array): Promise<void>
  /**
   * Optional: binds an upload (`PUT /v1/files`) read-only at `mount.path` for the sandbox's life instead of copying
   * its bytes, so a file of any size costs no copy and no workspace space; code in the sandbox cannot change it.
   * `readFile`, `listFiles` and snapshots see the upload's bytes there; `writeFile` or `deleteFile` on the path
   * replaces or removes the binding. Backends without it get the bytes through `writeFile`.
   */
  mountFile?(mount: FileMount): Promise<void>
  /** The file's bytes, or undefined when there is no regular file at that path. */
  readFile(path: string): Promise<Uint8Array | undefined>
  /** True when a file was removed. */
  deleteFile(path: string): Promise<boolean>
  /** Every regular file of the workspace. */
  listFiles(): Promise<SandboxFileEntry[]>
  /**
   * Optional: the sandbox's whole changed filesystem (its workspace and every other place an exec can write) as one
   * container archive (src/workspace/container-archive.ts), read in one call; throws `EXECGATE_WORKSPACE_LIMIT` past
   * `maxBytes`. `skipped` names what the backend could not read (and left out). Backends without it are snapshotted
   * file by file through `listFiles` and `readFile`.
   */
  snapshotArchive?(maxBytes: number): Promise<{ archive: Uint8Array; skipped: string[] }>
  /**
   * Optional, with `snapshotArchive`: unpacks a container archive into a sandbox just opened, in one call. The archive
   * is untrusted: the backend checks it (`checkContainerArchive`) and unpacks only inside the sandbox.
   */
  restoreArchive?(archive: Uint8Array, maxBytes: number): Promise<void>
  /** Ends the sandbox and frees all it holds (container, directory, processes, memory). Safe to call twice. */
  close(): Promise<void>
}

/** The adapters created at start-up, by name (bound to the `AdapterRegistry` token). */
export interface AdapterRegistry {
  get(name: string): CodeExecutionAdapter | undefined
  list(): readonly CodeExecutionAdapter[]
  /** Every adapter name execgate knows, enabled or not. */
  knownNames(): readonly string[]
}

/** Who asked for a run, beyond its request: lets a listener keep each tenant's record apart (the console's activity). */
export interface ExecutionListenerContext {
  /** The caller's tenant (`ExecuteOptions.tenant`: an API key's tenant, a task's), when it named one. */
  tenant?: string
}

/**
 * What the ExecutionService tells listeners of every run it answers, beyond its request and result: who it was for,
 * under which rules, and when. Nothing in it is a secret or an environment value (the artifact ledger records it).
 */
export interface RunInfo extends ExecutionListenerContext {
  /** The run's id, as in `result.runId`. */
  readonly runId: string
  readonly agentType?: string
  /** The lane it was admitted in (absent when it never reached admission). */
  readonly lane?: Lane
  /** The resolved policy it ran under; absent when the request was refused before the policy was resolved. */
  readonly policy?: SecurityPolicy
  /** The task, attempt, plan, version and step it belongs to. */
  readonly provenance?: RunProvenance
  /** Tier of the adapter that answered, when an adapter did. */
  readonly tier?: Tier
  /** That adapter's engines and their versions (`capabilities.engines`), when it names them. */
  readonly engines?: Readonly<Record<string, string>>
  /**
   * Workspace files the run read that neither its request brought nor it wrote first: a stable layer's, a session's
   * earlier calls'. Inputs, like the request's `files`.
   */
  readonly workspaceReads?: readonly { readonly path: string; readonly content: Uint8Array }[]
  /** Files the request named by digest (`{ path, sha256 }`), found among the tenant's uploads: inputs too. */
  readonly uploads?: readonly { readonly path: string; readonly sha256: string; readonly bytes: number }[]
  /** Epoch ms when the service received the request, and when the result was ready. */
  readonly startedAt: number
  readonly endedAt: number
}

/**
 * An observer of finished executions (logs, metrics, the console's activity, the artifact ledger). Every class bound
 * to the `ExecutionListener` token hears every result, including ones bound after start-up; a listener that throws
 * is logged and skipped. Listeners run on the result's path: they must be cheap and must not keep the caller waiting.
 */
export interface ExecutionListener {
  /** `context` is the run's `RunInfo` whenever the ExecutionService calls (every run through it). */
  onResult(result: ExecutionResult, request: ExecutionRequest, context?: ExecutionListenerContext | RunInfo): void
}
