import { staticRefusal } from './static-refusal'
import { locateUploads, type UploadLocator } from './uploaded-files'
import { performance } from 'node:perf_hooks'
import {
  ExecgateError,
  describeError,
  errorResult,
  type AdapterRegistry,
  type ExecutionListener,
  type ExecutionRequest,
  type ExecutionResult,
  type FileMount,
  type Language,
  type RunInfo,
  type SecurityPolicy,
  type ValidationReport,
} from '../core'
import { DEFAULT_SESSION_LIMITS, SharedDeadlines, type SessionLimits } from '../runtime'
import { staticValidationReport } from '../policy'
import type { Logger } from '../observability/logger'
import type { RouteDecision, RouteHints, Router } from '../routing/router'
import type { ExecuteOptions, ExecutionService, SandboxTarget } from './types'
import type { AdmissionController } from './admission/admission-controller'
import { findRequestProblem } from './parse-request'
import { callerPolicy } from './caller-policy'
import { namesHostFunction } from './run-host'
import { SessionWorkspaces, type SessionWorkspaceFactory } from './session-workspaces'
import type { EgressGateway } from '../egress'
import type { ResolvedRun } from './adapter-run'
import { attempt, type Answer, type AttemptShared, type ServiceRun } from './service-attempt'
import { newRunId } from './run-id'
import { DEFAULT_WORKSPACE_LIMITS, checkHostFunctionDefinition, type HostFunctionDefinition, type WorkspaceLimits } from '../workspace'

export interface ExecutionServiceOptions {
  registry: AdapterRegistry
  router: Router
  basePolicy: SecurityPolicy
  logger: Logger
  /** Named policies (`security.profiles`, already merged over the default) and the one each language starts from. */
  profiles?: Readonly<Record<string, SecurityPolicy>>
  languageProfiles?: Readonly<Partial<Record<Language, string>>>
  /** `security.requestFiles`: code reads the files its own request sent (`read`, the default), or such requests are refused. */
  requestFiles?: 'read' | 'refuse'
  listeners?: readonly ExecutionListener[]
  /** Time past the deadline an adapter gets to answer before the service answers `timeout` for it. */
  graceMs: number
  /** Size limits of every run's workspace. @default DEFAULT_WORKSPACE_LIMITS */
  workspaceLimits?: WorkspaceLimits
  /** Session workspaces' idle TTL and count. @default DEFAULT_SESSION_LIMITS (600 s, 32) */
  sessions?: SessionLimits
  /** Makes session workspaces (a bucket's, with `fabric.workspaces: s3`). @default in memory */
  sessionWorkspace?: SessionWorkspaceFactory
  /** Host functions offered to every run, beside the standard ones. */
  hostFunctions?: readonly HostFunctionDefinition[]
  /** Lanes, slots and quotas before each run; without it every run starts at once. */
  admission?: AdmissionController
  /** The egress gateway (docs/network.md): without it no run has any way out, whatever its policy says. */
  egress?: EgressGateway
  /** The upload store requests name files from by digest (`{ path, sha256 }`); without it such requests are refused. */
  uploads?: UploadLocator
}

const SERVICE = 'execgate'

const NO_UPLOADS = { mounts: Object.freeze([]) as readonly FileMount[] }

/** The steps of one execution (docs/architecture.md) for one request. Never rejects: every outcome, including our own bugs, is a result. */
export class DefaultExecutionService implements ExecutionService {
  private readonly workspaceLimits: WorkspaceLimits
  private readonly sessionWorkspaces: SessionWorkspaces
  /** What every attempt on an adapter shares: routing, admission, and the one timer of all the runs' backstops. */
  private readonly attempts: AttemptShared
  /** Whether the default policy or any profile names a host a run may reach (isRepeatable's quick answer when none does). */
  private readonly networkAnywhere: boolean

  constructor(private readonly options: ExecutionServiceOptions) {
    this.networkAnywhere = [options.basePolicy, ...Object.values(options.profiles ?? {})].some((policy) => policy.network !== 'none')
    for (const definition of options.hostFunctions ?? []) checkHostFunctionDefinition(definition)
    this.workspaceLimits = options.workspaceLimits ?? DEFAULT_WORKSPACE_LIMITS
    const sessions = options.sessions ?? DEFAULT_SESSION_LIMITS
    this.sessionWorkspaces = new SessionWorkspaces(
      this.workspaceLimits,
      sessions.ttlSeconds * 1000,
      sessions.maxSessions,
      options.sessionWorkspace,
    )
    this.attempts = {
      router: options.router,
      admission: options.admission,
      adapterRuns: {
        egress: options.egress,
        hostFunctions: options.hostFunctions ?? [],
        workspaceLimits: this.workspaceLimits,
        sessions: this.sessionWorkspaces,
        graceMs: options.graceMs,
        backstops: new SharedDeadlines(),
      },
    }
  }

  /** Drops a session's workspace; true when there was one. */
  closeSession(sessionId: string): boolean {
    return this.sessionWorkspaces.close(sessionId)
  }

  sessionFiles(sessionId: string): Promise<{ path: string; content: Buffer }[] | undefined> {
    return this.sessionWorkspaces.files(sessionId)
  }

  restoreSessionFiles(sessionId: string, files: readonly { path: string; content: Buffer }[]): Promise<void> {
    return this.sessionWorkspaces.restore(sessionId, files)
  }

  async execute(request: ExecutionRequest, options: ExecuteOptions = {}): Promise<ExecutionResult> {
    const started = performance.now()
    const startedAt = Date.now()
    // Not the traceId: a caller may send the same traceId again (a retry), and every run needs its own record.
    const runId = newRunId(startedAt)
    // A request without a traceId takes its run id as one: a UUID of its own run, as a random one would be, for
    // a quarter of a microsecond less on every run (randomUUID, measured on the trivial monty run).
    const traceId = typeof request?.traceId === 'string' && request.traceId ? request.traceId : runId
    const resolved: ResolvedRun = {}
    let result: ExecutionResult
    try {
      const answer = this.run(request, options, traceId, started, resolved)
      result = answer instanceof Promise ? await answer : answer
    } catch (error) {
      result = errorResult(
        'internal_error',
        SERVICE,
        new ExecgateError('EXECGATE_INTERNAL', { detail: describeError(error) }, { cause: error }),
      )
    }
    result.traceId = traceId
    result.runId = runId
    result.durationMs = performance.now() - started
    const listeners = this.options.listeners ?? []
    if (listeners.length === 0) return result
    // Set field by field: a literal of conditional spreads made and copied an empty object for each absent field.
    const run: { -readonly [K in keyof RunInfo]: RunInfo[K] } = { runId, startedAt, endedAt: Date.now() }
    if (options.tenant !== undefined) run.tenant = options.tenant
    if (typeof request?.agentType === 'string') run.agentType = request.agentType
    if (result.admission) run.lane = result.admission.lane
    if (resolved.policy) run.policy = resolved.policy
    if (options.provenance) run.provenance = options.provenance
    if (resolved.workspaceReads?.length) run.workspaceReads = resolved.workspaceReads
    if (resolved.mounts?.length)
      run.uploads = resolved.mounts.map((mount) => ({ path: mount.path, sha256: mount.sha256, bytes: mount.bytes }))
    if (result.adapter !== SERVICE) {
      // What the run's record says of the adapter that answered: its tier, and its engines' versions where it names them.
      const capabilities = this.options.registry.get(result.adapter)?.capabilities
      run.tier = capabilities?.tier
      if (capabilities?.engines) run.engines = capabilities.engines
    }
    for (const listener of listeners) {
      try {
        listener.onResult(result, request, run)
      } catch (error) {
        this.options.logger.error({ traceId, err: describeError(error) }, 'execution listener failed')
      }
    }
    return result
  }

  /**
   * Steps 1 to 8, each taken on the spot when it has nothing to wait for: a run that waits for nothing (monty inline,
   * a refusal) is answered without a promise of this method's own, and each step that waits continues from there.
   */
  private run(request: ExecutionRequest, options: ExecuteOptions, traceId: string, started: number, resolved: ResolvedRun): Answer {
    // 1. parse
    const problem = findRequestProblem(request)
    if (problem) return errorResult('invalid_request', SERVICE, new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: problem }))
    // Most requests name no upload: no async step for them (each costs the trivial run a promise and a turn).
    if (!request.files?.length) return this.withUploads(request, options, traceId, started, resolved, NO_UPLOADS)
    return locateUploads(request, options.tenant, this.options.uploads).then((uploads) =>
      this.withUploads(request, options, traceId, started, resolved, uploads),
    )
  }

  private withUploads(
    request: ExecutionRequest,
    options: ExecuteOptions,
    traceId: string,
    started: number,
    resolved: ResolvedRun,
    uploads: { mounts: readonly FileMount[]; refusal?: undefined } | { refusal: ExecutionResult },
  ): Answer {
    if (uploads.refusal) return uploads.refusal
    resolved.mounts = uploads.mounts
    // 2. policy: the caller's profile (a tenant's, else the language's, else the default), tightened by the request
    const resolution = callerPolicy(request, options, this.options)
    if (resolution.refusal)
      return this.withRouteNotTaken(resolution.refusal, request, options, options.basePolicy ?? this.options.basePolicy)
    const policy = resolution.policy
    resolved.policy = policy
    // 3. static validation
    const refused = staticRefusal(request, policy, this.options.profiles ?? {}, this.options.registry)
    if (refused) return refused.status === 'policy_violation' ? this.withRouteNotTaken(refused, request, options, policy) : refused
    // Set field by field: spreading `{}` for each absent hint cost every run an object and a copy.
    const hints: RouteHints = {}
    if (options.latencyBudgetMs) hints.latencyBudgetMs = options.latencyBudgetMs
    // Only sessions need to know (monty's REPL keeps one but cannot call host functions).
    if (request.sessionId !== undefined && this.codeNamesHostFunction(request, options)) hints.hostFunctions = true
    const run: ServiceRun = { request, options, traceId, started, resolved, policy, tried: [], fallbackFrom: undefined }
    if (!options.workspace) return this.route(run, hints)
    // What the script starts with sizes its cost on tiers that are slow per byte (see docs/adapters/shell.md).
    return options.workspace.list().then((entries) => {
      hints.workspaceBytes = entries.reduce((sum, entry) => sum + entry.size, 0)
      return this.route(run, hints)
    })
  }

  /** 4. route, then run on the chosen adapter. */
  private route(run: ServiceRun, hints: RouteHints): Answer {
    const { request, options, policy } = run
    const decision = options.sandbox ? this.sandboxRoute(options.sandbox, request) : this.options.router.select(request, policy, hints)
    run.fallbackFrom = decision.adapter ? decision.skipped : undefined
    return attempt(this.attempts, run, decision)
  }

  /**
   * A run refused before routing still says where it would have run: the adapter routing picks for it under the policy
   * (`route.wouldHaveUsed`), so a caller learns the tier as well as what to change.
   */
  private withRouteNotTaken(
    result: ExecutionResult,
    request: ExecutionRequest,
    options: ExecuteOptions,
    policy: SecurityPolicy,
  ): ExecutionResult {
    try {
      const decision = options.sandbox ? this.sandboxRoute(options.sandbox, request) : this.options.router.select(request, policy)
      if (decision.adapter)
        result.route = {
          reason: `refused before it ran; routing would have used ${decision.adapter.name} (${decision.reason})`,
          wouldHaveUsed: decision.adapter.name,
        }
    } catch {
      // Routing a refused request is only advice: a router that cannot route it leaves the refusal as it was.
    }
    return result
  }

  /** Step 4 for a sandbox's exec: its own adapter, if that is enabled and the sandbox runs the language. */
  private sandboxRoute(target: SandboxTarget, request: ExecutionRequest): RouteDecision {
    const adapter = this.options.registry.get(target.adapter)
    if (!adapter)
      return {
        refusal: {
          status: 'unavailable',
          error: new ExecgateError('EXECGATE_ADAPTER_UNAVAILABLE', { name: target.adapter, detail: 'it is not enabled' }),
        },
      }
    if (!target.handle.languages.includes(request.language)) {
      return {
        refusal: {
          status: 'invalid_request',
          error: new ExecgateError('EXECGATE_LANGUAGE_UNSUPPORTED', {
            name: `${target.adapter} (sandbox ${target.id})`,
            language: request.language,
            languages: target.handle.languages.join(', '),
          }),
        },
      }
    }
    return { adapter, reason: `sandbox ${target.id}` }
  }

  async dispose(): Promise<void> {
    await this.options.admission?.close()
    await this.options.egress?.dispose()
  }

  /** Whether the code names a host function this run would offer (the caller's own set, or ours and theirs). */
  private codeNamesHostFunction(request: ExecutionRequest, options: ExecuteOptions): boolean {
    if (options.hostFunctions) return options.hostFunctions.list().some((spec) => request.code.includes(spec.name))
    return namesHostFunction(request.code, [...(this.options.hostFunctions ?? []), ...(options.functions ?? [])])
  }

  /**
   * Whether a run of `request` for this caller leaves nothing behind but its answer (and its ledger record), so that
   * running it once more than asked changes nothing anyone sees: it keeps no session and no workspace or sandbox, its
   * policy reaches no network, and its code names none of the host functions given beside the standard ones (those act
   * for it outside its sandbox; the standard ones touch only its fresh workspace). The task scheduler begins only such
   * runs before the write that starts them (TaskRunner.early), which may drop one it has begun.
   */
  isRepeatable(request: ExecutionRequest, options: ExecuteOptions = {}): boolean {
    if (request.sessionId !== undefined || options.workspace || options.sandbox) return false
    const own = [...(this.options.hostFunctions ?? []), ...(options.functions ?? [])]
    if (options.hostFunctions || own.some((definition) => request.code.includes(definition.name))) return false
    // Requests only tighten their caller's policy: where no policy names a host, no run reaches one.
    if (!this.networkAnywhere && !options.basePolicy) return true
    return callerPolicy(request, options, this.options).policy?.network === 'none'
  }

  check(request: ExecutionRequest, options: ExecuteOptions = {}): ValidationReport {
    const language = request?.language
    const refused = (code: string, message: string): ValidationReport => ({
      valid: false,
      language,
      validator: 'policy',
      issues: [{ severity: 'error', code, message }],
      implemented: true,
    })
    const problem = findRequestProblem(request)
    if (problem) return refused('invalid_request', problem)
    const resolution = callerPolicy(request, options, this.options)
    if (resolution.refusal) return refused(resolution.refusal.status, resolution.refusal.message ?? resolution.refusal.status)
    return staticValidationReport(language, request.code, resolution.policy)
  }

  async validate(code: string, language: Language, adapterName?: string): Promise<ValidationReport> {
    const policyReport = staticValidationReport(language, code, this.options.basePolicy)
    const adapter = adapterName
      ? this.options.registry.get(adapterName)
      : this.options.router.select({ language, code }, this.options.basePolicy).adapter
    if (!adapter) return policyReport
    try {
      const adapterReport = await adapter.validate(code, language)
      const issues = [
        ...policyReport.issues,
        ...adapterReport.issues.filter((item) => !policyReport.issues.some((seen) => seen.message === item.message)),
      ]
      return {
        valid: !issues.some((item) => item.severity === 'error'),
        language,
        validator: `policy+${adapter.name}`,
        issues,
        implemented: policyReport.implemented || adapterReport.implemented,
      }
    } catch (error) {
      return {
        ...policyReport,
        issues: [
          ...policyReport.issues,
          {
            severity: 'warning',
            code: 'validator_failed',
            message: `[execgate] [${adapter.name}] validation failed: ${describeError(error)}`,
          },
        ],
      }
    }
  }

  languages(): readonly Language[] {
    const set = new Set<Language>()
    for (const adapter of this.options.registry.list()) {
      if (adapter.capabilities.tier === 0) continue
      for (const language of adapter.supportedLanguages()) set.add(language)
    }
    return [...set]
  }
}
