import type { CodeExecutionAdapter, ExecgateError, ExecutionRequest, ExecutionResult, ExecutionStatus, SecurityPolicy } from '../core'

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

/** Chooses the adapter for a request (bound to the `Router` token). */
export interface Router {
  select(request: ExecutionRequest, policy: SecurityPolicy, hints?: RouteHints): RouteDecision
  /** The next adapter to try after `failed` answered unavailable or crashed, if any. */
  fallback?(request: ExecutionRequest, policy: SecurityPolicy, tried: readonly string[]): RouteDecision | undefined
  /** Hears how each adapter run ended (circuit breakers). */
  observe?(adapterName: string, result: ExecutionResult): void
  /** Hears that a request is being sent to the adapter. */
  dispatched?(adapterName: string): void
}
