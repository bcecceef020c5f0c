import { performance } from 'node:perf_hooks'
import { errorResult, type CodeExecutionAdapter, type ExecutionRequest, type ExecutionResult, type SecurityPolicy } from '../core'
import type { RouteDecision, Router } from '../routing/router'
import type { AdmissionController, AdmissionTicket } from './admission/admission-controller'
import { runOnAdapter, type AdapterRunShared, type ResolvedRun } from './adapter-run'
import { rerunOnFullLanguage } from './cpython-rerun'
import type { ExecuteOptions } from './types'

const SERVICE = 'execgate'

export type Answer = ExecutionResult | Promise<ExecutionResult>

/** What every attempt on an adapter shares: routing, admission, and the adapters' runs' settings and timer. */
export interface AttemptShared {
  router: Router
  /** Without it (a service built by hand) every run starts at once. */
  admission?: AdmissionController
  adapterRuns: AdapterRunShared
}

/** One request's way through the steps after its policy: what each attempt on an adapter reads and adds to. */
export interface ServiceRun {
  request: ExecutionRequest
  options: ExecuteOptions
  traceId: string
  /** When the request arrived, on `performance.now()`'s clock. */
  started: number
  resolved: ResolvedRun
  policy: SecurityPolicy
  /** The adapters tried so far, in order. */
  tried: string[]
  /** The adapter passed over or failed before the one answering, and why. */
  fallbackFrom: ExecutionResult['fallbackFrom']
}

type Routed = Extract<RouteDecision, { adapter: CodeExecutionAdapter }>

/**
 * Steps 5 to 8 on the decision's adapter: admission, the run, then a rerun or a fallback when it failed. Each step
 * that has nothing to wait for is taken on the spot (a free slot, monty's inline answer), so a trivial run is
 * answered without a promise; each step that waits continues from there.
 */
export function attempt(shared: AttemptShared, run: ServiceRun, decision: RouteDecision): Answer {
  if (!decision.adapter) return errorResult(decision.refusal.status, SERVICE, decision.refusal.error)
  const adapter = decision.adapter
  run.tried.push(adapter.name)
  // Admission: a slot of this adapter in the request's lane, or a refusal (queue full, quota, never started).
  // Awaited only when the run queues: a free slot is answered on the spot.
  const admitted = admit(shared, adapter, run)
  if (admitted instanceof Promise) return admitted.then((ticket) => withTicket(shared, run, decision, ticket))
  return withTicket(shared, run, decision, admitted)
}

/** A slot from admission, or (without admission) a ticket that starts at once. */
function admit(
  shared: AttemptShared,
  adapter: CodeExecutionAdapter,
  { request, policy, options, started }: ServiceRun,
): Promise<AdmissionTicket | ExecutionResult> | AdmissionTicket | ExecutionResult {
  if (shared.admission) return shared.admission.acquire(adapter, request, policy, { tenant: options.tenant, signal: options.signal })
  return { lane: request.lane ?? 'batch', priority: request.priority ?? 0, queuedMs: 0, startedAt: started, release: () => undefined }
}

function withTicket(shared: AttemptShared, run: ServiceRun, decision: Routed, ticket: AdmissionTicket | ExecutionResult): Answer {
  if ('status' in ticket) return ticket
  const adapter = decision.adapter
  shared.router.dispatched?.(adapter.name)
  // Still warming (pyodide behind the first tier at start-up): this run waits for it, and its route says so.
  const warming = !run.options.sandbox && adapter.isWarm?.() === false
  const { request, policy, options, traceId, resolved } = run
  let ran: Answer
  try {
    // A run the adapter answers on the spot (monty inline) comes back without a promise: nothing to wait for.
    ran = runOnAdapter(
      { adapter, request, policy, options, traceId, started: ticket.startedAt, resolved, egressQuota: ticket.egressQuota },
      shared.adapterRuns,
    )
  } catch (error) {
    ticket.release(0)
    throw error
  }
  if (!(ran instanceof Promise)) return answered(shared, run, decision, ticket, warming, ran)
  return ran.then(
    (result) => answered(shared, run, decision, ticket, warming, result),
    (error: unknown) => {
      ticket.release(0)
      throw error
    },
  )
}

/** The adapter's answer: admission's slot back, what routing learns, the route; then a rerun or a fallback if it failed. */
function answered(
  shared: AttemptShared,
  run: ServiceRun,
  decision: Routed,
  ticket: AdmissionTicket,
  warming: boolean,
  result: ExecutionResult,
): Answer {
  const adapter = decision.adapter
  ticket.release(result.usage.cpuMs ?? result.usage.wallMs ?? performance.now() - ticket.startedAt)
  result.admission = { lane: ticket.lane, priority: ticket.priority, queuedMs: ticket.queuedMs }
  const router = shared.router
  router.observe?.(adapter.name, result)
  if (run.fallbackFrom) result.fallbackFrom = run.fallbackFrom
  if (decision.reason) {
    const reason = warming
      ? `${decision.reason}; ${adapter.name} was still warming up: the run waited for it (its code's time limit starts when it does)`
      : decision.reason
    result.route = decision.escalatedFrom ? { reason, escalatedFrom: decision.escalatedFrom } : { reason }
  }
  const { request, policy, options, traceId, started, resolved, tried } = run
  // A sandbox's exec stays in its sandbox: no rerun or fallback on another adapter, which has none of its state.
  if (options.sandbox) return result
  // Only an error can be rerun (rerunOnFullLanguage's first check): the other results skip its async step.
  if (result.status !== 'error') return fallBack(shared, run, adapter, result)
  return rerunOnFullLanguage(result, adapter, {
    request,
    policy,
    options,
    router,
    tried,
    runOn: async (next) =>
      runOnAdapter(
        { adapter: next, request, policy, options, traceId, started, resolved, egressQuota: ticket.egressQuota },
        shared.adapterRuns,
      ),
  }).then((rerun) => rerun ?? fallBack(shared, run, adapter, result))
}

/** 8. The next adapter routing offers after a backend failed, else the result as it is. */
function fallBack(shared: AttemptShared, run: ServiceRun, adapter: CodeExecutionAdapter, result: ExecutionResult): Answer {
  if (result.status !== 'unavailable' && !(result.status === 'internal_error' && result.adapter !== SERVICE)) return result
  const next = shared.router.fallback?.(run.request, run.policy, run.tried)
  if (!next?.adapter) return result
  run.fallbackFrom = { adapter: adapter.name, reason: result.message ?? result.status }
  return attempt(shared, run, next)
}
