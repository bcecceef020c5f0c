import type {
  AdapterSandbox,
  ExecutionRequest,
  ExecutionResult,
  FilesystemAccess,
  Output,
  HostFunctions,
  Language,
  RunProvenance,
  SecurityPolicy,
  ValidationReport,
} from '../core'
import type { LlmProvider } from '../core/llm'
import type { HostFunctionDefinition, Workspace } from '../workspace'

export interface ExecuteOptions {
  /** Aborting it cancels the run; the result is `cancelled`. */
  signal?: AbortSignal
  /** Receives stdout/stderr chunks while the code runs. */
  onOutput?: (stream: 'stdout' | 'stderr', chunk: string) => void
  /**
   * Receives each rich output while the code runs, with its index in the result's `outputs`, from adapters whose
   * runner reports them as they are made; the result still carries them all (docs/data.md#rich-outputs).
   */
  onRichOutput?: (output: Output, index: number) => void
  /** The caller's policy (a tenant's profile); requests tighten it. @default config's security.defaultPolicy */
  basePolicy?: SecurityPolicy
  /**
   * A complete set of host functions to use instead of the standard ones over the workspace (an embedder's own
   * implementation). Most callers want `functions` instead.
   */
  hostFunctions?: HostFunctions
  /** A policy profile from `security.profiles` (a tenant's) to start from instead of the language's or the default. */
  profile?: string
  /**
   * The run's workspace, e.g. an `OverlayWorkspace` over a `DirectoryLayer`. Without one a request with a
   * `sessionId` uses the session's workspace, and any other request a fresh in-memory one.
   */
  workspace?: Workspace
  /** Host functions of the caller's own for this run, beside the standard ones (`read_file`, … `submit_result`). */
  functions?: readonly HostFunctionDefinition[]
  /** The language model `ask_llm` asks; without one `ask_llm` raises an error inside the code. */
  llm?: LlmProvider
  /** Prefer adapters that answer within this long (see `RouteHints`); the voice handler sets it. */
  latencyBudgetMs?: number
  /** Who the run is for, for admission's per-tenant lane and quotas (`admission.tenants`); the HTTP API sets it. */
  tenant?: string
  /** What the run belongs to (a task's attempt, a plan's step), for the ledger's provenance record. */
  provenance?: RunProvenance
  /**
   * Access to the run's own fresh workspace granted by the caller over the policy's `filesystem` (raising it to at
   * least this): a plan step reads its dependencies' outputs there. A fresh workspace holds only the request's files,
   * so this reaches nothing else; it is ignored for a session's workspace or one the caller passes in (unless it is
   * `freshWorkspace`).
   */
  workspaceAccess?: Exclude<FilesystemAccess, 'none'>
  /**
   * The `workspace` passed was made for this run alone and holds only what the run brings (a plan step's bucket
   * prefix, emptied before each attempt): `workspaceAccess` reaches it as it reaches a fresh one. @default false
   */
  freshWorkspace?: boolean
  /**
   * Runs the request in this open sandbox (src/fabric/sandboxes) instead of routing it: on the sandbox's adapter,
   * with no fallback elsewhere (its state is there). The policy, the static checks, admission, the output cap and
   * the listeners apply as to any run.
   */
  sandbox?: SandboxTarget
}

/** A persistent sandbox a run goes to: its id, the adapter that opened it, and the adapter's handle. */
export interface SandboxTarget {
  id: string
  adapter: string
  handle: AdapterSandbox
}

// Declared in the contract (src/core/types.ts) since listeners receive it (RunInfo); re-exported here where callers look.
export type { RunProvenance } from '../core'

/** Runs requests end to end (the eight steps of docs/architecture.md). `execute` never rejects. Bound to the `ExecutionService` token. */
export interface ExecutionService {
  execute(request: ExecutionRequest, options?: ExecuteOptions): Promise<ExecutionResult>
  validate(code: string, language: Language, adapter?: string): Promise<ValidationReport>
  /**
   * What `execute` would refuse before running anything, for this caller (steps 1 to 3: the request's shape, its
   * policy under the caller's profile and options, the static checks), as a report; nothing runs.
   */
  check(request: ExecutionRequest, options?: ExecuteOptions): ValidationReport
  /**
   * Whether running `request` once more than asked changes nothing anyone sees (no session, workspace or sandbox kept,
   * no network, no host function of the caller's): only such a run may be begun before it is sure to be wanted.
   * Absent: none is.
   */
  isRepeatable?(request: ExecutionRequest, options?: ExecuteOptions): boolean
  languages(): readonly Language[]
  /** Drops a session's workspace; true when there was one. */
  closeSession?(sessionId: string): boolean
  /**
   * The files of a session's workspace held in this process's memory (for another node to take the session over);
   * undefined when none is held here, or its files live in a bucket every node reads already.
   */
  sessionFiles?(sessionId: string): Promise<{ path: string; content: Buffer }[] | undefined>
  /** Writes files into a session's workspace: a session taken over from a node that died. */
  restoreSessionFiles?(sessionId: string, files: readonly { path: string; content: Buffer }[]): Promise<void>
  /** Stops admitting runs: queued ones are answered `unavailable` with a retry hint; resolves when running ones end. */
  dispose?(): Promise<void>
}
