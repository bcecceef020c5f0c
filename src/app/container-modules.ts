import { ContainerModule, type Container } from 'inversify'
import path from 'node:path'
import { ADAPTERS, type AdapterDefinition } from '../../adapters/registry'
import {
  describeError,
  type AdapterRegistry,
  type ExecutionListener,
  type ExecutionListenerContext,
  type ExecutionRequest,
  type ExecutionResult,
  type Tier,
} from '../core'
import type { Config } from '../config/load'
import { AdmissionController } from '../execution/admission/admission-controller'
import { DefaultExecutionService } from '../execution/execution-service'
import type { ExecutionService } from '../execution/types'
import { ExecutionLog } from '../observability/execution-log'
import type { Logger } from '../observability/logger'
import { policyFromConfig, profilesFromConfig } from '../policy'
import { HealthBoard } from '../readiness/health'
import { ReadinessMonitor } from '../readiness/readiness-monitor'
import { CircuitBreakers } from '../readiness/circuit-breaker'
import { ConfigRouter } from '../routing/config-router'
import type { Router } from '../routing/router'
import * as tokens from './tokens'
import { CountedContainer } from './counted-container'
import { S3Objects, S3Workspace, type HostFunctionDefinition, type Workspace } from '../workspace'
import { createLedger, disabledLedger, s3SettingsFrom, type LedgerService } from '../fabric/ledger'
import { storeDriver } from '../fabric/drivers'
import type { PlanStore } from '../fabric/plans'
import type { TaskStore } from '../fabric/tasks'
import { EXECGATE_VERSION } from '../config/version'
import { EgressGateway } from '../egress'
import { UploadStore } from '../fabric/files'
import { ExecgateError } from '../core/errors'

/** Internal tokens: the health board and breakers that readiness and routing share. Not for rebinding. */
const HEALTH_BOARD = Symbol('HealthBoard')
const BREAKERS = Symbol('CircuitBreakers')

/** The frozen configuration. */
export function configModule(config: Config): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind<Config>(tokens.Config).toConstantValue(config)
  })
}

/** The logger, and the log line of every finished execution as a listener. */
export function loggingModule(logger: Logger): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind<Logger>(tokens.Logger).toConstantValue(logger)
    bind<ExecutionListener>(tokens.ExecutionListener).toConstantValue(new ExecutionLog(logger))
  })
}

/**
 * One adapter: its token resolves (asynchronously, once) to the adapter the registry's factory creates. A user's
 * module may rebind the token to a class or value of their own.
 */
export function adapterModule(definition: AdapterDefinition, config: Config, warmOnStart: boolean): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind(tokens.adapterToken(definition.name))
      .toDynamicValue(() => definition.create(config.adapters as never, { sessions: config.sessions, warmOnStart }))
      .inSingletonScope()
  })
}

/** The readiness monitor with the health board and circuit breakers it shares with routing. */
export function readinessModule(config: Config): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind(HEALTH_BOARD).toConstantValue(new HealthBoard(config.readiness))
    bind(BREAKERS).toConstantValue(new CircuitBreakers(config.routing.breaker))
    bind<ReadinessMonitor>(tokens.Readiness)
      .toDynamicValue((context) => {
        const configured = config.execution.adapter === 'auto' ? undefined : config.execution.adapter
        return new ReadinessMonitor(
          context.get<AdapterRegistry>(tokens.AdapterRegistry),
          context.get<HealthBoard>(HEALTH_BOARD),
          context.get<CircuitBreakers>(BREAKERS),
          { ...config.readiness, configuredAdapter: configured, futureAdapter: config.execution.futureAdapter || undefined },
          context.get<Logger>(tokens.Logger),
        )
      })
      .inSingletonScope()
  })
}

/** The config router over the registry, the readiness binding, health and breakers. */
export function routingModule(config: Config): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind<Router>(tokens.Router)
      .toDynamicValue(
        (context) =>
          new ConfigRouter(context.get<AdapterRegistry>(tokens.AdapterRegistry), config.execution.adapter, {
            fallbackChain: config.execution.fallback,
            tierOrder: config.routing.tierOrder as Tier[],
            binding: context.get<ReadinessMonitor>(tokens.Readiness),
            health: context.get<HealthBoard>(HEALTH_BOARD),
            breakers: context.get<CircuitBreakers>(BREAKERS),
          }),
      )
      .inSingletonScope()
  })
}

/**
 * Hands every result to every `ExecutionListener` bound in the container at that moment, so a listener bound
 * after start-up (a server's metrics) hears runs too. One that throws is logged; the others still hear.
 */
class ContainerListeners implements ExecutionListener {
  private listeners: readonly ExecutionListener[] = []
  /** The container's binding count when `listeners` was resolved; NaN: never (or a container that does not count). */
  private resolvedAt = Number.NaN

  constructor(
    private readonly container: Container,
    private readonly logger: Logger,
  ) {}

  onResult(result: ExecutionResult, request: ExecutionRequest, context?: ExecutionListenerContext): void {
    // Resolved again only when a binding changed (CountedContainer): on every run it cost 7 % of a trivial one.
    const container = this.container
    const changes = container instanceof CountedContainer ? container.bindingChanges : Number.NaN
    if (changes !== this.resolvedAt) {
      this.listeners = container.getAll<ExecutionListener>(tokens.ExecutionListener, { optional: true })
      this.resolvedAt = changes
    }
    for (const listener of this.listeners) {
      try {
        listener.onResult(result, request, context)
      } catch (error) {
        this.logger.error({ traceId: result.traceId, err: describeError(error) }, 'execution listener failed')
      }
    }
  }
}

/**
 * Admission (lanes, slots, bounded queues, quotas) and the execution service: the eight steps over the router and
 * registry, admitting each run before it reaches its adapter and telling the bound listeners how it ended.
 */
export function executionModule(
  container: Container,
  config: Config,
  hostFunctions: readonly HostFunctionDefinition[] | undefined,
): ContainerModule {
  return new ContainerModule(({ bind }) => {
    bind<AdmissionController>(tokens.Admission)
      .toDynamicValue((context) => {
        const { queue, ...settings } = config.admission
        return new AdmissionController({ ...settings, queueLimits: queue }, context.get<AdapterRegistry>(tokens.AdapterRegistry).list())
      })
      .inSingletonScope()
    bind<EgressGateway>(tokens.EgressGateway)
      .toDynamicValue(() => {
        const { allowPrivateRanges, ...caps } = config.security.egress
        try {
          return new EgressGateway({ caps, allowPrivateRanges, secrets: config.security.secrets })
        } catch (error) {
          throw new ExecgateError('EXECGATE_CONFIG_INVALID', { detail: describeError(error) }, { cause: error })
        }
      })
      .inSingletonScope()
    // Opened at the first upload or the first request that names one: most processes never touch it.
    bind<UploadStore>(tokens.Uploads).toConstantValue(uploadStoreFor(config))
    bind<ExecutionService>(tokens.ExecutionService)
      .toDynamicValue((context) => {
        const logger = context.get<Logger>(tokens.Logger)
        return new DefaultExecutionService({
          registry: context.get<AdapterRegistry>(tokens.AdapterRegistry),
          router: context.get<Router>(tokens.Router),
          basePolicy: policyFromConfig(config),
          profiles: profilesFromConfig(config),
          languageProfiles: config.security.languageProfiles,
          requestFiles: config.security.requestFiles,
          logger,
          listeners: [new ContainerListeners(container, logger)],
          graceMs: config.execution.graceMs,
          workspaceLimits: config.workspace,
          sessions: config.sessions,
          ...(config.fabric.workspaces === 's3' ? { sessionWorkspace: bucketSessionWorkspaces(config) } : {}),
          hostFunctions,
          admission: context.get<AdmissionController>(tokens.Admission),
          egress: context.get<EgressGateway>(tokens.EgressGateway),
          uploads: context.get<UploadStore>(tokens.Uploads),
        })
      })
      .inSingletonScope()
  })
}

/**
 * The upload store: its index on Redis when the fabric is (every node sees every upload), its blobs shared through the
 * ledger's bucket when the ledger's blobs are there, and this node's copies in `fabric.files.dir`.
 */
function uploadStoreFor(config: Config): UploadStore {
  const root = config.fabric.files.dir || path.join(config.fabric.dataDir, 'uploads')
  const index = storeDriver(config.fabric.store).uploadIndex(config.fabric)
  return new UploadStore({
    root,
    quotaBytesPerTenant: config.fabric.files.quotaBytes,
    ...(index ? { index } : {}),
    ...(config.fabric.ledger.blobs === 's3'
      ? {
          shared: new S3Objects(s3SettingsFrom(config.fabric.s3, 'fabric.ledger.blobs')).under('uploads/'),
          localCopyBytes: config.fabric.files.localCopyBytes,
        }
      : {}),
  })
}

/** One module per adapter execgate knows (only the enabled ones are ever resolved). */
export function adapterModules(config: Config, warmOnStart: boolean): ContainerModule[] {
  return Object.values(ADAPTERS).map((definition) => adapterModule(definition, config, warmOnStart))
}

/** Session workspaces in the bucket (`fabric.workspaces: s3`): `<prefix>workspaces/sessions/<id>/`, shared by every node. */
function bucketSessionWorkspaces(config: Config): (sessionId: string) => Workspace & { clear(): Promise<void> } {
  const sessions = new S3Objects(s3SettingsFrom(config.fabric.s3, 'fabric.workspaces')).under('workspaces/sessions/')
  return (sessionId) => new S3Workspace(sessions.under(`${encodeURIComponent(sessionId)}/`), config.workspace)
}

/**
 * The artifact ledger (docs/ledger.md), bound to `Ledger` and, when enabled, as an `ExecutionListener`: every run
 * through the service is recorded, whoever called. Created here, so a bad storage setting stops start-up; its stores
 * open at the first run.
 */
export function ledgerModule(config: Config, logger: Logger): ContainerModule {
  return new ContainerModule(({ bind }) => {
    if (!config.fabric.ledger.enabled) {
      bind<LedgerService>(tokens.Ledger).toConstantValue(disabledLedger())
      return
    }
    const ledger = createLedger(config.fabric, { execgateVersion: EXECGATE_VERSION, logger })
    bind<LedgerService>(tokens.Ledger).toConstantValue(ledger)
    bind<ExecutionListener>(tokens.ExecutionListener).toConstantValue(ledger)
  })
}

/**
 * The fabric's stores, each opened at first use by the driver `fabric.store` names (src/fabric/drivers), so a process
 * that never touches tasks or plans opens neither. A user's module may rebind either token to a store of its own; the
 * services resolve them here.
 */
export function fabricStoresModule(config: Config): ContainerModule {
  const driver = storeDriver(config.fabric.store)
  return new ContainerModule(({ bind }) => {
    bind<TaskStore>(tokens.TaskStore)
      .toDynamicValue(() => driver.tasks(config.fabric))
      .inSingletonScope()
    bind<PlanStore>(tokens.PlanStore)
      .toDynamicValue((context) => driver.plans(config.fabric, context.get<TaskStore>(tokens.TaskStore)))
      .inSingletonScope()
  })
}
