/**
 * The execution contract's data types (the policy's vocabulary is in policy-types.ts, re-exported here). This layer
 * imports nothing of ours: adapters, routing and the service all speak these shapes, so a change here is a change to
 * the product's public API.
 */

import type { Lane, PolicyLimit, PolicyOverrides } from './policy-types'

export { FILESYSTEM_ACCESS, LANES, POLICY_LIMITS } from './policy-types'
export type { FilesystemAccess, Lane, NetworkAccess, PolicyLimit, PolicyOverrides, SecurityPolicy } from './policy-types'

/** Languages execgate knows how to route. An adapter declares which of them it runs. */
export const LANGUAGES = ['javascript', 'typescript', 'python', 'bash'] as const
export type Language = (typeof LANGUAGES)[number]

/**
 * The one status vocabulary. Every adapter maps its backend's outcomes onto these, so a caller never has to
 * read an exit code or an exception name to learn what happened.
 */
export const EXECUTION_STATUSES = [
  'ok', // the code ran to completion
  'error', // the code raised, or did not parse
  'timeout', // the wall- or CPU-time limit stopped it
  'memory_limit', // the memory limit stopped it
  'output_limit', // stdout + stderr + value passed the output cap; head and tail are kept
  'policy_violation', // refused by the policy (an import, a loosened limit, a host-call budget)
  'invalid_request', // the request itself is malformed; the message names the field
  'unavailable', // the backend cannot run anything right now (routing may fall back)
  'not_implemented', // the placeholder: nothing runs; describe the computation instead
  'cancelled', // the caller aborted the run
  'internal_error', // execgate or the backend failed, not the user's code
] as const
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number]

/** A file placed in the execution's workspace before the run, or collected from it after. */
export interface WorkspaceFile {
  /** Path relative to the workspace root; `..`, absolute paths and NUL bytes are refused. */
  path: string
  content: string
  /** @default 'utf8' */
  encoding?: 'utf8' | 'base64'
}

/**
 * A file uploaded before (`PUT /v1/files`) named by its digest instead of its content: the run's workspace holds it
 * at `path`. OS sandboxes bind it in read-only from the upload store; other tiers get its bytes copied in.
 */
export interface FileReference {
  /** Path relative to the workspace root, as for a `WorkspaceFile`. */
  path: string
  /** The upload's SHA-256, 64 hexadecimal characters. */
  sha256: string
}

/** A file a request brings: its content inline, or a reference to an upload of the caller's. */
export type RequestFile = WorkspaceFile | FileReference

/** An uploaded file resolved for one run: where its bytes are on this host, for adapters that bind files in. */
export interface FileMount {
  /** Path relative to the workspace root. */
  readonly path: string
  readonly sha256: string
  readonly bytes: number
  /** The upload store's file; adapters bind it read-only and never write it. */
  readonly hostPath: string
}

export interface ExecutionRequest {
  language: Language
  code: string
  /** Text fed to the program's standard input, on backends that have one. */
  stdin?: string
  /** Files placed in the workspace before the run: inline, or `{ path, sha256 }` of the caller's upload. */
  files?: RequestFile[]
  /** Keeps interpreter state between calls, on adapters with the `sessions` capability. */
  sessionId?: string
  /** Pins a backend by name; otherwise routing chooses. */
  adapter?: string
  /** Shorthand for `policy.wallTimeMs`; may only tighten. */
  timeoutMs?: number
  /** Shorthand for `policy.memoryMb`; may only tighten. */
  memoryMb?: number
  policy?: PolicyOverrides
  /** Correlates logs and results; generated when absent. */
  traceId?: string
  /** The admission lane; a tenant's config may fix it. @default config `admission.defaultLane` */
  lane?: Lane
  /** Order within the lane's queue: higher starts first, equal ones in arrival order. @default 0 */
  priority?: number
  /** A named agent-type profile (`admission.agentTypes`): its caps on time, memory and concurrent runs apply. */
  agentType?: string
  /** Longest the request may wait in the queue before it starts; never longer than its time limit. */
  maxQueueMs?: number
  /** How rich outputs are made (docs/data.md#rich-outputs). */
  outputs?: OutputOptions
}

/** How a run's rich outputs are made. */
export interface OutputOptions {
  /**
   * The format of the charts a Python run makes (matplotlib figures shown or left open): `svg` saves them as
   * `image/svg+xml` instead of `image/png`. @default 'png'
   */
  imageFormat?: 'png' | 'svg'
}

export interface ExecutionErrorInfo {
  /** The backend's error class, e.g. `SyntaxError`, `ZeroDivisionError`, `TimeoutError`. */
  type: string
  /** execgate's error code (docs/errors.md) when execgate, not the code, refused or failed the run. */
  code?: string
  message: string
  line?: number
  column?: number
  stack?: string
}

export interface ResourceUsage {
  /** Wall time the backend spent running the code, in milliseconds. */
  wallMs?: number
  cpuMs?: number
  /** Peak or final memory the backend reported, in bytes. */
  memoryBytes?: number
  hostCalls?: number
  /** Bytes of stdout + stderr + value produced, before any truncation. */
  outputBytes?: number
}

/** One host-function call, as recorded in the result's action log. */
export interface HostCallRecord {
  name: string
  ok: boolean
  durationMs: number
  error?: string
}

/** One request (or refused attempt) the code made through the egress gateway, in the run's record. */
export interface EgressRecord {
  method: string
  host: string
  port: number
  /** The URL, for plain HTTP and host-function requests (a tunnel's path is the code's secret). */
  url?: string
  /** The upstream's HTTP status, or the gateway's own (403 refused, 502/504 upstream failed). */
  status?: number
  bytesOut: number
  bytesIn: number
  decision: 'allowed' | 'denied'
  /** The allow rule that matched, or for a refusal the check that refused. */
  rule?: string
  /** Why a request was refused or cut short, in words. */
  reason?: string
  durationMs: number
}

/**
 * One rich output of a run, in the order the code made it: a matplotlib figure (shown, or left open at the end), a
 * pandas table (the last expression's value), or what the code passed to `display()`. `bytes` is counted by the host
 * (an image's decoded bytes, a table's or a JSON item's JSON text, an HTML item's UTF-8) against
 * `policy.outputsBytes`.
 */
export type Output =
  | { kind: 'image'; mimeType: 'image/png' | 'image/svg+xml'; /** base64 */ data: string; bytes: number }
  | {
      kind: 'table'
      columns: string[]
      /** The first rows, as many as fit the output caps; `rowCount` says how many the table had. */
      rows: unknown[][]
      rowCount: number
      bytes: number
    }
  | { kind: 'html'; mimeType: 'text/html'; data: string; bytes: number }
  | { kind: 'json'; mimeType: 'application/json'; data: unknown; bytes: number }
export type OutputKind = Output['kind']

export interface ExecutionResult {
  status: ExecutionStatus
  /** The adapter that produced this result. */
  adapter: string
  traceId: string
  /**
   * This run's own id, new for every `execute` call (a retry, a task's next attempt, a caller reusing a traceId: each
   * gets its own): the key of its provenance record in the artifact ledger. Set by the ExecutionService.
   */
  runId?: string
  /** Milliseconds from the service receiving the request to the result, measured with `performance.now()`. */
  durationMs: number
  stdout: string
  stderr: string
  /** The JSON value of the last expression, or what `submit_result` stored. */
  value?: unknown
  error?: ExecutionErrorInfo
  /** True when stdout/stderr were cut to the output cap (head and tail kept, a marker between). */
  truncated: boolean
  /** Bytes the program wrote to stdout and stderr, before truncation. */
  stdoutBytes: number
  stderrBytes: number
  usage: ResourceUsage
  /** A sentence for humans, set for every status other than `ok`. */
  message?: string
  /** The placeholder's advice: what a caller should do instead of running code. */
  fallbackAction?: 'describe_computation_only'
  /** Set when routing moved the request off another adapter, with why. */
  fallbackFrom?: { adapter: string; reason: string }
  /** Why this adapter was chosen when routing had a choice (e.g. escalation from monty to pyodide). */
  route?: {
    reason: string
    escalatedFrom?: string
    /** The adapter whose `error` was run again here (a language-subset interpreter's gap, not the code's fault). */
    rerunFrom?: string
    /** On a run refused before it ran (`adapter: execgate`): the adapter routing would have sent it to. */
    wouldHaveUsed?: string
  }
  /** Workspace files after the run, when the backend collects them. */
  files?: WorkspaceFile[]
  /** Images, tables and `display()` items, in the order the code made them (docs/data.md#rich-outputs). */
  outputs?: Output[]
  hostCalls?: HostCallRecord[]
  /** Requests the code made through the egress gateway (at most 100 kept), when the policy allowed any network. */
  egress?: EgressRecord[]
  /** The lane the run was admitted in and how long it waited for a slot (absent when admission refused it). */
  admission?: { lane: Lane; priority: number; queuedMs: number }
  /** Set on a refusal worth retrying (a full queue, a quota, a shutdown): how long to wait first, in ms. */
  retryAfterMs?: number
}

export type ValidationSeverity = 'error' | 'warning'

export interface ValidationIssue {
  severity: ValidationSeverity
  /** Stable machine-readable kind: `syntax`, `import_not_allowed`, `forbidden_call`, `unsupported`, `not_implemented`. */
  code: string
  message: string
  line?: number
  column?: number
}

export interface ValidationReport {
  /** False when any issue has severity `error`. */
  valid: boolean
  language: Language
  /** Who validated: an adapter name, or `policy` for the static checks. */
  validator: string
  issues: ValidationIssue[]
  /** False when the validator cannot validate at all (the placeholder). */
  implemented: boolean
}

export type HealthState = 'available' | 'degraded' | 'unavailable'

export interface Availability {
  status: HealthState
  /** Why the adapter is not available, in words that say what to fix. */
  reason?: string
  latencyMs?: number
  /** ISO-8601 time of the check. */
  checkedAt: string
}

/** How hard an adapter holds a limit: the backend stops it, it is checked after the fact, or not at all. */
export type Enforcement = 'hard' | 'soft' | 'none'

export type Tier = 0 | 1 | 2 | 3 | 4
/** Tier names from the execution-layer design; 0 is the placeholder, which runs nothing. */
export const TIER_NAMES: Record<Tier, string> = {
  0: 'placeholder',
  1: 'in-process',
  2: 'remote service',
  3: 'WebAssembly module',
  4: 'OS sandbox',
}

export interface AdapterCapabilities {
  readonly languages: readonly Language[]
  readonly tier: Tier
  /** The isolation boundary in words, e.g. `wasm memory`, `user/pid/net/mount namespaces`. */
  readonly isolation: string
  readonly enforcement: Readonly<Record<PolicyLimit, Enforcement>>
  /** Keeps state across calls with the same `sessionId`. */
  readonly sessions: boolean
  /** Sandboxed code can call host functions from the context. */
  readonly hostFunctions: boolean
  /**
   * Host functions the engine's own libraries call for the code (pyodide's urllib and `pyodide.http` call
   * `http_request`), so they are offered even when the code does not name them. @default []
   */
  readonly implicitHostFunctions?: readonly string[]
  /** Request `files` reach the code (as host functions or as real files). */
  readonly workspace: boolean
  /**
   * Uploaded files (`context.mounts`) are bound into the sandbox read-only from the host, never copied through the
   * request; without it the service copies their bytes into the run's workspace. @default false
   */
  readonly fileMounts?: boolean
  /** Output is delivered through `context.onOutput` while the code runs. */
  readonly streaming: boolean
  /** The code can reach an allow-listed network. */
  readonly network: boolean
  /**
   * A run can be stopped mid-way through `context.signal`. In-process interpreters that run synchronously cannot
   * be; their runs are bounded by the wall-time limit instead.
   */
  readonly cancellable: boolean
  /**
   * Runs a subset of its languages (monty's Python): an `error` may be the interpreter's gap rather than the code's
   * fault, so the service may run a side-effect-free run again on a full implementation. @default false
   */
  readonly languageSubset?: boolean
  /**
   * Runs the adapter can have going at once (its worker threads, pool processes, sandbox uids): admission counts
   * this many slots for it. Absent: admission does not bound the adapter's concurrency (a remote service, the
   * placeholder).
   */
  readonly concurrency?: number
  /**
   * Opens persistent sandboxes (`openSandbox`): one environment kept across many execs, with files in and out
   * (docs/sandboxes.md). @default false
   */
  readonly sandboxes?: boolean
  /** The engines that run the code and their versions (`quickjs-emscripten`: `0.31.0`), for the run's record and receipt. */
  readonly engines?: Readonly<Record<string, string>>
  /**
   * A seccomp filter on every run: the system calls it refuses and what they answer. Absent where the adapter sets
   * none; `execgate policy --adapter` lists it.
   */
  readonly syscallFilter?: SyscallFilterSummary
  /**
   * Third-party Python packages the code can import here, by import name (`pandas`, `numpy`; src/core/packages.ts).
   * Routing sends Python that imports one of them only to adapters that list it. @default []
   */
  readonly packages?: readonly string[]
}

/** What an adapter's seccomp filter does, in words `execgate policy` can print. */
export interface SyscallFilterSummary {
  /** Refused with EPERM whatever their arguments. */
  readonly denied: readonly string[]
  /** Refused only with some arguments: the call and which (`clone: with namespace flags`). */
  readonly conditional: readonly { readonly call: string; readonly when: string; readonly errno: string }[]
  /** What a call from another architecture's ABI (x86's int 0x80 in an x86_64 process) gets. */
  readonly foreignArchitecture: string
}

/** Where a run sits in the fabric: set by the task scheduler (task, attempt) and the plan engine (plan, version, step). */
export interface RunProvenance {
  taskId?: string
  /** The task's attempt, 1 for the first run. */
  attempt?: number
  planId?: string
  planVersion?: number
  stepId?: string
}
