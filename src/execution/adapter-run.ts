import { performance } from 'node:perf_hooks'
import {
  ExecgateError,
  OutputCapture,
  describeError,
  errorResult,
  refusal,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type FileMount,
  type SecurityPolicy,
} from '../core'
import type { ArmedDeadline, SharedDeadlines } from '../runtime/shared-deadlines'
import type { EgressGateway, EgressQuota } from '../egress'
import { checkHostFunctionDefinition, type HostFunctionDefinition, type WorkspaceLimits } from '../workspace'
import { LazyAbort } from './lazy-abort'
import { normaliseResult } from './normalise-result'
import { openRunEgress, type RunEgress } from './run-egress'
import { prepareRunHost, type RunHost } from './run-host'
import type { SessionWorkspaces } from './session-workspaces'
import type { ExecuteOptions } from './types'
import { placeUploads } from './uploaded-files'

const SERVICE = 'execgate'

/** What a run learns on the way that the listeners' RunInfo reports (the policy is resolved before it). */
export interface ResolvedRun {
  policy?: SecurityPolicy
  /** What the run (its last adapter's) read from its workspace that it had not written. */
  workspaceReads?: { path: string; content: Buffer }[]
  /** The request's uploads, found in the caller's store before the run. */
  mounts?: readonly FileMount[]
}

/** What every run on an adapter shares: the service's settings, and the one timer of every run's backstop. */
export interface AdapterRunShared {
  egress?: EgressGateway
  hostFunctions: readonly HostFunctionDefinition[]
  workspaceLimits: WorkspaceLimits
  sessions: SessionWorkspaces
  /** Time past the deadline an adapter gets to answer before the service answers `timeout` for it. */
  graceMs: number
  backstops: SharedDeadlines
}

/** One run of a request on one adapter (step 5 after admission). */
export interface AdapterRun {
  adapter: CodeExecutionAdapter
  request: ExecutionRequest
  policy: SecurityPolicy
  options: ExecuteOptions
  traceId: string
  /** When the run's clock started (its admission), on `performance.now()`'s clock. */
  started: number
  resolved: ResolvedRun
  /** The tenant's egress quotas, live, from the run's admission ticket. */
  egressQuota?: EgressQuota
}

/** What `runOnAdapter` sets up before the adapter starts. */
interface Prepared {
  run: AdapterRun
  shared: AdapterRunShared
  controller: LazyAbort
  egress: RunEgress
}

type Answer = ExecutionResult | Promise<ExecutionResult>

/**
 * Runs the request on the adapter: its egress, uploads and workspace, the adapter's own run raced against the
 * backstop (deadline + grace) and the caller's cancel, then the run's effects and the output cap. Every step that
 * has nothing to wait for is taken on the spot, so a run the adapter answers synchronously (`executeNow`: monty's
 * inline runs) is answered without a promise or a turn of the event loop; each step that waits continues from there.
 */
export function runOnAdapter(run: AdapterRun, shared: AdapterRunShared): Answer {
  const { adapter, policy, options } = run
  if (options.signal?.aborted) return refusal('cancelled', adapter.name, '[execgate] the run was cancelled before it started', 'Cancelled')
  for (const definition of options.functions ?? []) {
    try {
      checkHostFunctionDefinition(definition)
    } catch (error) {
      return errorResult('invalid_request', SERVICE, error as ExecgateError)
    }
  }
  const controller = new LazyAbort()
  const egress = openRunEgress(shared.egress, policy, () => controller.signal, run.egressQuota)
  if ('status' in egress) return egress
  const prepared: Prepared = { run, shared, controller, egress }
  const mounts = run.resolved.mounts
  if (!mounts?.length) return withHost(prepared, run.request)
  return placeUploads(adapter, run.request, mounts, shared.workspaceLimits.maxFileBytes).then((placed) => {
    if ('status' in placed) {
      egress.close()
      return placed
    }
    return withHost(prepared, placed.request, placed.mounts)
  })
}

function withHost(prepared: Prepared, request: ExecutionRequest, mounts?: readonly FileMount[]): Answer {
  const { run, shared, egress } = prepared
  const host = prepareRunHost(run.adapter, request, run.policy, run.options, {
    limits: shared.workspaceLimits,
    sessions: shared.sessions,
    definitions: egress.definitions.length ? [...shared.hostFunctions, ...egress.definitions] : shared.hostFunctions,
  })
  return host instanceof Promise
    ? host.then((ready) => withReadyHost(prepared, request, mounts, ready))
    : withReadyHost(prepared, request, mounts, host)
}

function withReadyHost(
  prepared: Prepared,
  request: ExecutionRequest,
  mounts: readonly FileMount[] | undefined,
  host: RunHost | ExecutionResult,
): Answer {
  if ('status' in host) {
    prepared.egress.close()
    return host
  }
  const ready: RunHost = host
  const raced = race(prepared, request, mounts, ready)
  return raced instanceof Promise ? raced.then((result) => landEffects(prepared, ready, result)) : landEffects(prepared, ready, raced)
}

/** The host's effects (files, the submitted value), the egress record, then the output cap. */
function landEffects(prepared: Prepared, host: RunHost, result: ExecutionResult): Answer {
  const hosted = host.finish(result)
  return hosted instanceof Promise ? hosted.then((done) => normalised(prepared, host, done)) : normalised(prepared, host, hosted)
}

function normalised({ run, egress }: Prepared, host: RunHost, result: ExecutionResult): ExecutionResult {
  const finished = egress.finish(result)
  run.resolved.workspaceReads = host.reads()
  return normaliseResult(finished, run.adapter, run.policy)
}

/**
 * The adapter's answer, or the service's for it: whichever comes first of the adapter, the backstop (an adapter that
 * ignores its deadline cannot hold the caller: after the grace period we answer for it), or the caller cancelling.
 */
function race(
  { run, shared, controller, egress }: Prepared,
  request: ExecutionRequest,
  mounts: readonly FileMount[] | undefined,
  host: RunHost,
): Answer {
  const { adapter, policy, options } = run
  const callerSignal = options.signal
  // What the adapter streams is kept here too (and passed on to a streaming caller), so an answer the service gives
  // for an adapter that did not stop in time still carries the output up to then. Made at the first chunk: most
  // runs stream none (an inline monty run hands its output over in its result).
  let streamed: OutputCapture | undefined
  let backstop: ArmedDeadline | undefined
  let settled = false
  // The answer when it came on the spot, else how the promise returned below resolves.
  const answer: { now?: ExecutionResult; resolve?: (result: ExecutionResult) => void } = {}
  const settle = (result: ExecutionResult) => {
    if (settled) return
    settled = true
    shared.backstops.disarm(backstop)
    callerSignal?.removeEventListener('abort', onCallerAbort)
    host.close()
    egress.close()
    if (answer.resolve) answer.resolve(result)
    else answer.now = result
  }
  const onBackstop = () => {
    controller.abort(new Error('deadline'))
    // Output past the cap before the deadline: the cap broke first, as the adapters themselves count it.
    const exceeded = streamed?.exceeded === true
    const limit = exceeded ? `passed the ${policy.outputBytes}-byte output limit` : `passed its ${policy.wallTimeMs} ms limit`
    const message = `[execgate] [${adapter.name}] the run ${limit} and the adapter did not stop within ${shared.graceMs} ms`
    settle(
      refusal(exceeded ? 'output_limit' : 'timeout', adapter.name, message, exceeded ? 'OutputLimit' : 'TimeoutError', streamed?.finish()),
    )
  }
  // On the service's shared timer: a deadline is an entry in a Set, not a timer of its own (see SharedDeadlines).
  const armBackstop = () => {
    shared.backstops.disarm(backstop)
    if (!settled) backstop = shared.backstops.arm(policy.wallTimeMs + shared.graceMs, onBackstop)
  }
  const onCallerAbort = () => {
    controller.abort(callerSignal?.reason)
    // The adapter gets a moment to stop and answer `cancelled` itself, with whatever output it has.
    setTimeout(
      () => settle(refusal('cancelled', adapter.name, '[execgate] the run was cancelled by the caller', 'Cancelled', streamed?.finish())),
      shared.graceMs,
    )
  }
  // The optional fields set after the literal, not spread into it: on Node 20 every property a literal defines after
  // a spread is a slow runtime call (see adapters/monty/index.ts, runInline's result).
  const context = {
    [ABORT]: controller,
    traceId: run.traceId,
    policy,
    isAborted: () => controller.aborted,
    onAbort: (listener) => controller.listen(listener),
    deadline: run.started + policy.wallTimeMs,
    onOutput: (stream, chunk) => void (streamed ??= new OutputCapture(policy.outputBytes, options.onOutput)).write(stream, chunk),
    hostFunctions: host.context.hostFunctions,
    pauseClock: () => shared.backstops.disarm(backstop),
    restartClock: () => {
      armBackstop()
      return performance.now() + policy.wallTimeMs
    },
  } as RunContext
  Object.defineProperty(context, 'signal', SIGNAL)
  if (options.onRichOutput) context.onRichOutput = options.onRichOutput
  if (host.context.files) context.files = host.context.files
  if (egress.access) context.egress = egress.access
  if (mounts) context.mounts = mounts
  armBackstop()
  callerSignal?.addEventListener('abort', onCallerAbort, { once: true })
  let outcome: ExecutionResult | PromiseLike<ExecutionResult>
  try {
    const sandbox = options.sandbox?.handle
    outcome = sandbox
      ? sandbox.exec(request, context)
      : adapter.executeNow
        ? adapter.executeNow(request, context)
        : adapter.execute(request, context)
  } catch (error) {
    outcome = failed(adapter, error)
  }
  if (isThenable(outcome))
    void Promise.resolve(outcome).then(
      (result) => settle(checked(adapter, result)),
      (error: unknown) => settle(failed(adapter, error)),
    )
  else settle(checked(adapter, outcome))
  // Answered on the spot (an inline run): no promise, no turn of the event loop.
  if (answer.now) return answer.now
  return new Promise<ExecutionResult>((resolve) => (answer.resolve = resolve))
}

/** Where a run's context keeps its LazyAbort, for the one `signal` getter all contexts share. */
const ABORT = Symbol('execgate.runAbort')

type RunContext = { -readonly [K in keyof ExecutionContext]: ExecutionContext[K] } & { [ABORT]: LazyAbort }

/**
 * A context's `signal`: the run's LazyAbort's, made when first read. One getter for every run, defined on each
 * context (an own, enumerable property, so a copy of the context by spread still has its signal). Written in the
 * object literal, the getter was a new closure a run, and V8's scavenger kept each run's whole graph alive through
 * it: 2.4 MB promoted at every scavenge and ~10 ms pauses on trivial monty runs (--trace-gc-nvp), collected only by
 * the next mark-compact; the isolated pattern cost 619 ns an object against 175 ns this way (measured).
 */
const SIGNAL: PropertyDescriptor = {
  get(this: RunContext): AbortSignal {
    return this[ABORT].signal
  },
  enumerable: true,
  configurable: true,
}

function isThenable(value: unknown): value is PromiseLike<ExecutionResult> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function'
}

/** The adapter's result, or `internal_error` when it returned none. */
function checked(adapter: CodeExecutionAdapter, result: ExecutionResult): ExecutionResult {
  if (!result || typeof result !== 'object' || typeof result.status !== 'string')
    return refusal('internal_error', adapter.name, `[execgate] [${adapter.name}] the adapter returned no result`, 'InternalError')
  return result
}

/** An adapter that threw (or rejected): `internal_error` with the cause. */
function failed(adapter: CodeExecutionAdapter, error: unknown): ExecutionResult {
  return errorResult(
    'internal_error',
    adapter.name,
    new ExecgateError(
      'EXECGATE_BACKEND_FAILED',
      { name: adapter.name, detail: describeError(error) },
      { cause: error, source: adapter.name },
    ),
  )
}
