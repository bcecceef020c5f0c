/**
 * Every DI token, each beside the interface it stands for (Theia's convention): `Router` is both the symbol
 * you inject and the type you get. Interfaces here speak only the contract's types, so any layer may depend
 * on them without depending on an implementation.
 */
import type {
  CodeExecutionAdapter,
  ExecgateError,
  ExecutionRequest,
  ExecutionResult,
  ExecutionStatus,
  HostFunctions,
  Language,
  SecurityPolicy,
  ValidationReport,
} from './core'
import type { Config as LoadedConfig } from './config/load'
import type { LlmProvider } from './agents/llm'
import type { HostFunctionDefinition, Workspace } from './workspace'
import type { ReadinessMonitor } from './readiness/readiness-monitor'

/** The validated, frozen configuration. */
export const Config = Symbol('Config')
export type Config = LoadedConfig

/** Structured logger (pino's shape). */
export const Logger = Symbol('Logger')
export interface Logger {
  trace(obj: object | string, msg?: string): void
  debug(obj: object | string, msg?: string): void
  info(obj: object | string, msg?: string): void
  warn(obj: object | string, msg?: string): void
  error(obj: object | string, msg?: string): void
  child(bindings: Record<string, unknown>): Logger
  isLevelEnabled(level: string): boolean
}

/** The adapters created at start-up, by name. */
export const AdapterRegistry = Symbol('AdapterRegistry')
export interface AdapterRegistry {
  get(name: string): CodeExecutionAdapter | undefined
  list(): readonly CodeExecutionAdapter[]
  /** Every adapter name execgate knows, enabled or not. */
  knownNames(): readonly string[]
}

/** A routing decision: the adapter to run on and why, or a refusal the service turns into a result. */
export type RouteDecision =
  | {
      adapter: CodeExecutionAdapter
      reason: string
      escalatedFrom?: string
      /** The adapter routing passed over (down, or its breaker open), recorded as the result's `fallbackFrom`. */
      skipped?: { adapter: string; reason: string }
      refusal?: undefined
    }
  | { adapter?: undefined; refusal: { status: ExecutionStatus; error: ExecgateError } }

/** Chooses the adapter for a request. */
export const Router = Symbol('Router')
/** What a caller wants of routing beyond the request itself. */
export interface RouteHints {
  /**
   * The caller cannot wait longer than this (a voice agent's answer budget): adapters whose last readiness check
   * took longer are passed over for one that answers faster, when there is one.
   */
  latencyBudgetMs?: number
  /** The code names host functions the run would offer (the service knows its definitions; the router does not). */
  hostFunctions?: boolean
  /** Bytes in the run's own workspace (`ExecuteOptions.workspace`), for adapters' cost estimates. */
  workspaceBytes?: number
}

export interface Router {
  select(request: ExecutionRequest, policy: SecurityPolicy, hints?: RouteHints): RouteDecision
  /** The next adapter to try after `failed` answered unavailable or crashed, if any. */
  fallback?(request: ExecutionRequest, policy: SecurityPolicy, tried: readonly string[]): RouteDecision | undefined
  /** Hears how each adapter run ended (circuit breakers). */
  observe?(adapterName: string, result: ExecutionResult): void
  /** Hears that a request is being sent to the adapter. */
  dispatched?(adapterName: string): void
}

export interface ExecuteOptions {
  /** Aborting it cancels the run; the result is `cancelled`. */
  signal?: AbortSignal
  /** Receives stdout/stderr chunks while the code runs. */
  onOutput?: (stream: 'stdout' | 'stderr', chunk: string) => void
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
}

/** Runs requests end to end (DESIGN.md steps 1–8). `execute` never rejects. */
export const ExecutionService = Symbol('ExecutionService')
export interface ExecutionService {
  execute(request: ExecutionRequest, options?: ExecuteOptions): Promise<ExecutionResult>
  validate(code: string, language: Language, adapter?: string): Promise<ValidationReport>
  languages(): readonly Language[]
  /** Drops a session's workspace; true when there was one. */
  closeSession?(sessionId: string): boolean
}

/** Observers of finished executions (logs, metrics, the ledger); several may be bound. */
export const ExecutionListener = Symbol('ExecutionListener')
export interface ExecutionListener {
  onResult(result: ExecutionResult, request: ExecutionRequest): void
}

/** The readiness monitor: adapter health, the active binding and its switches (events `switch`, `health`). */
export const Readiness = Symbol('Readiness')
export type Readiness = ReadinessMonitor
