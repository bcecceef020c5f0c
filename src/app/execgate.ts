import type { Container } from 'inversify'
import { createContainer, type ContainerOptions } from './container'
import {
  ExecgateError,
  type AdapterRegistry,
  type CodeExecutionAdapter,
  type ExecutionRequest,
  type ExecutionResult,
  type Language,
  type SecurityPolicy,
  type Tier,
  type ValidationReport,
} from '../core'
import { explainPolicy, policyFromConfig, profilesFromConfig, type PolicyExplanation } from '../policy'
import type { Config } from '../config/load'
import type { ExecuteOptions, ExecutionService } from '../execution/types'
import type { Logger } from '../observability/logger'
import type { AdapterHealth } from '../readiness/health'
import type { ReadinessMonitor, SwitchEvent } from '../readiness/readiness-monitor'
import type { BreakerState } from '../readiness/circuit-breaker'
import * as tokens from './tokens'
import { AdapterWarmUp } from './warm-up'
import type { TaskService } from '../fabric/tasks'
import type { PlanService, PlanStore } from '../fabric/plans'
import { announcePlanSteps, fabricParts, planServiceFor, sandboxManagerFor, sessionDirectoryFor, taskServiceFor } from './fabric-wiring'
import type { LlmProvider } from '../core/llm'
import type { AdmissionController, AdmissionStatus } from '../execution/admission/admission-controller'
import type { LedgerService } from '../fabric/ledger'
import type { UploadStore } from '../fabric/files'
import type { SandboxManager, SandboxService } from '../fabric/sandboxes'
import type { SessionDirectory, SessionWhereabouts } from '../fabric/sessions'
import { retireOwnerId } from '../fabric/owner-id'

/**
 * The library's face, built by the composition root: `createExecgate` loads the configuration, builds the container
 * (src/app/container.ts), warms the adapters and joins the fabric (src/app/fabric-wiring.ts). The server, the CLI and
 * `execgate worker` all start from an `Execgate`.
 */
/** The library's face: one object that runs code, validates it and reports on its adapters. */
export interface Execgate {
  execute(request: ExecutionRequest, options?: ExecuteOptions): Promise<ExecutionResult>
  validate(code: string, language: Language, adapter?: string): Promise<ValidationReport>
  languages(): readonly Language[]
  adapters(): readonly CodeExecutionAdapter[]
  /** Health of every adapter, the active adapter and the last switch, as the readiness monitor last saw them. */
  status(): ExecgateStatus
  /** Runs every adapter's availability check now (and the canaries, if configured), then returns the status. */
  checkNow(): Promise<ExecgateStatus>
  /** How an adapter holds each limit of a policy (default: the configured policy, or a named profile's). */
  explainPolicy(adapter: string, policy?: SecurityPolicy | string): PolicyExplanation
  /** Ends a session on every adapter that keeps one under this id; true when one did. */
  closeSession(sessionId: string): Promise<boolean>
  /**
   * Where a session is in the fabric (docs/sandboxes.md#sessions-across-nodes): `here` (or a process that does not
   * serve), `new`, on another live `node` (the HTTP API forwards its calls there), or `lost` with its node.
   */
  locateSession(sessionId: string): Promise<SessionWhereabouts>
  /**
   * Without names: resolves once the first-tier adapters (tier 1: quickjs, monty, the shell) are warm or have failed
   * to (an adapter stays usable, cold; the log says why), and starts the others' warm-ups behind (pyodide, which a
   * request needing it meanwhile waits for, its route saying so). `createExecgate()` awaits it unless `warm: false`;
   * `execgate serve` answers `/readyz` 200 from then on. With names (`ready(['pyodide'])`): resolves once those
   * adapters are warm or have failed, starting their warm-ups if need be; rejects only for a name that is not enabled
   * (EXECGATE_ADAPTER_UNKNOWN). Safe to call any number of times.
   */
  ready(adapters?: readonly string[]): Promise<void>
  /** Durable tasks (docs/tasks.md) in the store `fabric.store` names; opened at first use. */
  readonly tasks: TaskService
  /** The artifact ledger (docs/ledger.md): every run's provenance, its artifacts and their lineage, per tenant. */
  readonly ledger: LedgerService
  /** Files uploaded once and named by digest in requests (`{ path, sha256 }`; docs/data.md), per tenant with a quota. */
  readonly uploads: UploadStore
  /** Plans of steps run as tasks, revised by the reflector when a step fails (docs/plans.md); opened at first use. */
  readonly plans: PlanService
  /** Persistent sandboxes (docs/sandboxes.md): live environments to exec into, stopped by `dispose()`. */
  readonly sandboxes: SandboxService
  /** The readiness monitor, for its `switch` and `health` events. */
  readonly readiness: ReadinessMonitor
  readonly config: Config
  readonly container: Container
  /**
   * Stops everything this execgate started. Runs of tasks in flight are interrupted (they go back to the queue for
   * a worker, or a restart, to run again) unless `finishRuns`: then they finish first (`execgate worker` on SIGTERM,
   * a CLI command that waited for its task).
   */
  dispose(options?: { finishRuns?: boolean }): Promise<void>
}

export interface AdapterStatus {
  name: string
  tier: Tier
  languages: readonly Language[]
  health: AdapterHealth
  breaker: BreakerState
  /** For adapters that warm up: whether a run now would not pay a cold start. */
  warm?: boolean
  /** Present on adapters that can host persistent sandboxes (docs/sandboxes.md). */
  sandboxes?: true
}

export interface ExecgateStatus {
  /** The adapter requests without a pin go to; `auto` when routing picks the cheapest available. */
  active: string
  lastSwitch?: SwitchEvent
  /** The first-tier adapters are warm (`ready()` resolved): `/readyz` answers ready only after it. */
  warmedUp: boolean
  adapters: AdapterStatus[]
  /** Slots in use per lane and queue depth of every adapter, and the in-process batch bound. */
  admission: AdmissionStatus
}

/** An adapter whose own options say `warmOnStart: false` (pyodide's, to save its seconds of load) is not warmed by `ready()`. */
function startsWarm(config: Config, adapterName: string): boolean {
  const options = (config.adapters as Record<string, { warmOnStart?: boolean } | undefined>)[adapterName]
  return options?.warmOnStart !== false
}

export interface ExecgateOptions extends ContainerOptions {
  /**
   * false: resolve at once, starting no adapter worker or interpreter; `ready()` warms them (`execgate serve`
   * listens first, then warms, with `/readyz` answering 503 until done). @default true
   */
  warm?: boolean
  /**
   * `server`: this execgate serves the HTTP API, and runs tasks only if `fabric.serveRunsTasks` (with the `redis`
   * store, workers may do all the running). `client`: it submits and reads tasks and plans and runs none (a CLI
   * command that does not wait must not start runs it would abandon on exit). @default 'library' (runs tasks)
   */
  role?: 'library' | 'server' | 'client'
  /** The plans' reflector, instead of the Bedrock model `fabric.plans.reflector.modelId` names. */
  reflector?: LlmProvider
}

/**
 * Loads config, creates the enabled adapters, warms those that can warm up (unless `warm: false`) and returns an
 * execgate whose first request pays no cold start (its readiness monitor scheduled).
 */
export async function createExecgate(options: ExecgateOptions = {}): Promise<Execgate> {
  const warm = options.warm ?? true
  const container = await createContainer({ ...options, warmOnStart: options.warmOnStart ?? warm })
  const service = container.get<ExecutionService>(tokens.ExecutionService)
  const registry = container.get<AdapterRegistry>(tokens.AdapterRegistry)
  const readiness = container.get<ReadinessMonitor>(tokens.Readiness)
  const config = container.get<Config>(tokens.Config)
  const logger = container.get<Logger>(tokens.Logger)
  const warmUp = new AdapterWarmUp(
    () => registry.list(),
    logger,
    (adapter) => startsWarm(config, adapter.name),
  )
  let disposed = false
  // The monitor starts once the first tier is warm: node-cron's first schedule costs ~80 ms of ICU set-up (measured
  // in `execgate serve`'s CPU profile), which has no business on the way to ready. With `warm: false`, at `ready()`.
  const startMonitor = () => {
    if (config.readiness.enabled && !disposed) readiness.start()
  }
  let firstTier: Promise<void> | undefined
  const ready = (names?: readonly string[]) => (names ? warmUp.ready(names) : (firstTier ??= warmUp.ready().then(startMonitor)))
  if (warm) await ready()
  const admission = container.get<AdmissionController>(tokens.Admission)
  const status = (): ExecgateStatus => ({
    active: readiness.active() ?? 'auto',
    ...(readiness.lastSwitch() ? { lastSwitch: readiness.lastSwitch() } : {}),
    warmedUp: warmUp.warmedUp,
    adapters: registry.list().map((adapter) => ({
      name: adapter.name,
      tier: adapter.capabilities.tier,
      languages: adapter.supportedLanguages(),
      health: readiness.health(adapter.name),
      breaker: readiness.breaker(adapter.name),
      ...(adapter.isWarm ? { warm: adapter.isWarm() } : {}),
      ...(adapter.capabilities.sandboxes ? { sandboxes: true as const } : {}),
    })),
    admission: admission.status(),
  })
  const fabric = fabricParts(container)
  const ledger = fabric.ledger
  const uploads = container.get<UploadStore>(tokens.Uploads)
  let tasks: TaskService | undefined
  let plans: PlanService | undefined
  const role = options.role ?? 'library'
  const runsTasks = role === 'library' || (role === 'server' && config.fabric.serveRunsTasks)
  let announcedTo: () => PlanStore | undefined = () => undefined
  const taskService = () => {
    if (!tasks) {
      tasks = taskServiceFor(fabric, runsTasks)
      announcedTo = announcePlanSteps(fabric, tasks)
    }
    return tasks
  }
  let sandboxes: SandboxManager | undefined
  const sandboxManager = () => (sandboxes ??= sandboxManagerFor(fabric))
  let sessions: SessionDirectory | undefined
  const sessionDirectory = () => (sessions ??= sessionDirectoryFor(fabric, sandboxManager()))
  const run = (request: ExecutionRequest, executeOptions?: ExecuteOptions) => service.execute(request, executeOptions)
  return {
    // A session call on a serving node goes where its session is (a node that never advertised has nobody to share with).
    execute: (request, executeOptions) =>
      request?.sessionId !== undefined && sandboxes?.url
        ? sessionDirectory().execute(request, executeOptions, run)
        : run(request, executeOptions),
    validate: (code, language, adapter) => service.validate(code, language, adapter),
    languages: () => service.languages(),
    adapters: () => registry.list(),
    status,
    async checkNow() {
      await readiness.checkNow()
      return status()
    },
    explainPolicy(adapterName, policy) {
      const adapter = registry.get(adapterName)
      if (!adapter)
        throw new ExecgateError('EXECGATE_ADAPTER_UNKNOWN', {
          name: adapterName,
          known: registry
            .list()
            .map((item) => item.name)
            .join(', '),
        })
      let resolved: SecurityPolicy
      if (typeof policy === 'string') {
        const profiles = profilesFromConfig(config)
        if (!profiles[policy])
          throw new ExecgateError('EXECGATE_PROFILE_UNKNOWN', { name: policy, known: Object.keys(profiles).join(', ') || 'none' })
        resolved = profiles[policy]!
      } else {
        resolved = policy ?? policyFromConfig(config)
      }
      return explainPolicy(resolved, adapter)
    },
    async closeSession(sessionId) {
      const closed = await Promise.all(registry.list().map(async (adapter) => (await adapter.closeSession?.(sessionId)) ?? false))
      const workspace = service.closeSession?.(sessionId) ?? false
      await sessions?.close(sessionId)
      return closed.some(Boolean) || workspace
    },
    locateSession: async (sessionId) => (sandboxes?.url ? sessionDirectory().locate(sessionId) : { kind: 'here' }),
    ready,
    get tasks() {
      return taskService()
    },
    get plans() {
      return (plans ??= planServiceFor(fabric, taskService(), { reflector: options.reflector, run: role !== 'client' }))
    },
    ledger,
    uploads,
    get sandboxes() {
      return sandboxManager()
    },
    readiness,
    config,
    container,
    async dispose(disposeOptions = {}) {
      if (disposed) return
      disposed = true
      // The plans first: they must not read the interrupted runs going back to PENDING as their steps' doing.
      await plans?.close()
      // The plan store the step announcements opened (a worker's), when no plan service closed it.
      if (!plans) await announcedTo()?.close()
      await tasks?.close({ abort: disposeOptions.finishRuns !== true })
      // Gone: another execgate of this process takes over what this one held (its runs, its revisions).
      retireOwnerId(fabric.owner)
      // Before admission closes and the adapters go: their execs are cancelled, their containers and folders removed.
      await sandboxes?.close()
      await sessions?.dispose()
      // Queued runs are answered (unavailable, with a retry hint) and running ones finish before adapters go.
      await service.dispose?.()
      // After the last run has ended: every record heard is written before the process may exit.
      await ledger.close()
      await uploads.close()
      await readiness.stop()
      await Promise.allSettled(registry.list().map((adapter) => adapter.dispose()))
    },
  }
}
