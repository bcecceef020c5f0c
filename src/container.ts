import 'reflect-metadata'
import { Container } from 'inversify'
import { ADAPTERS } from '../adapters/registry'
import { ExecgateError, describeError, type CodeExecutionAdapter, type Tier } from './core'
import { loadConfig, type LoadConfigOptions } from './config/load'
import { AdmissionController } from './execution/admission/admission-controller'
import { DefaultExecutionService } from './execution/execution-service'
import { createLogger } from './observability/logger'
import { policyFromConfig, profilesFromConfig } from './policy'
import { HealthBoard } from './readiness/health'
import { ReadinessMonitor } from './readiness/readiness-monitor'
import { CircuitBreakers } from './routing/circuit-breaker'
import { ConfigRouter } from './routing/config-router'
import type { HostFunctionDefinition } from './workspace'
import { Admission, AdapterRegistry, Config, ExecutionListener, ExecutionService, Logger, Readiness, Router } from './tokens'

export interface ContainerOptions extends LoadConfigOptions {
  /** An already-loaded config; skips loading. */
  config?: Config
  /** Adapters to use instead of creating them from the registry (tests with a deliberately failing adapter). */
  adapters?: readonly CodeExecutionAdapter[]
  logger?: Logger
  /** Host functions offered to every run besides the standard ones; each is checked at start-up. */
  hostFunctions?: readonly HostFunctionDefinition[]
}

class MapAdapterRegistry implements AdapterRegistry {
  private readonly byName: ReadonlyMap<string, CodeExecutionAdapter>
  private readonly all: readonly CodeExecutionAdapter[]
  constructor(adapters: readonly CodeExecutionAdapter[]) {
    this.all = adapters
    this.byName = new Map(adapters.map((adapter) => [adapter.name, adapter]))
  }
  get(name: string) {
    return this.byName.get(name)
  }
  list() {
    return this.all
  }
  knownNames() {
    return Object.keys(ADAPTERS)
  }
}

/** Creates the enabled adapters; an unknown name stops start-up naming the key, the value and what is allowed. */
async function createAdapters(config: Config): Promise<CodeExecutionAdapter[]> {
  const known = Object.keys(ADAPTERS)
  for (const key of ['execution.enabled', 'execution.fallback', 'execution.adapter', 'execution.futureAdapter'] as const) {
    const value = key === 'execution.enabled' ? config.execution.enabled : key === 'execution.fallback' ? config.execution.fallback : [key === 'execution.adapter' ? config.execution.adapter : config.execution.futureAdapter]
    const unknown = value.filter((name) => name && name !== 'auto' && !known.includes(name))
    if (unknown.length > 0) {
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', { detail: `${key}: unknown adapter "${unknown[0]}"; known adapters: ${known.join(', ')}: value was ${JSON.stringify(value)}` })
    }
  }
  const pinned = config.execution.adapter
  if (pinned !== 'auto' && !config.execution.enabled.includes(pinned)) {
    throw new ExecgateError('EXECGATE_CONFIG_INVALID', { detail: `execution.adapter: "${pinned}" is not in execution.enabled (${config.execution.enabled.join(', ')})` })
  }
  for (const key of ['execution.futureAdapter', 'execution.fallback'] as const) {
    const names = key === 'execution.fallback' ? config.execution.fallback : [config.execution.futureAdapter].filter(Boolean)
    const missing = names.filter((name) => !config.execution.enabled.includes(name))
    if (missing.length > 0) {
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', { detail: `${key}: "${missing[0]}" is not in execution.enabled (${config.execution.enabled.join(', ')})` })
    }
  }
  const adapters: CodeExecutionAdapter[] = []
  for (const name of config.execution.enabled) {
    try {
      adapters.push(await ADAPTERS[name]!.create(config.adapters as never, { sessions: config.sessions }))
    } catch (error) {
      await Promise.allSettled(adapters.map((adapter) => adapter.dispose()))
      if (error instanceof ExecgateError) throw error
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', { detail: `adapter ${name} could not be created: ${describeError(error)}` }, { cause: error })
    }
  }
  return adapters
}

/** Builds the DI container: config, logger, the enabled adapters, router and execution service. */
export async function createContainer(options: ContainerOptions = {}): Promise<Container> {
  const config = options.config ?? loadConfig(options)
  const container = new Container()
  container.bind<Config>(Config).toConstantValue(config)
  const logger = options.logger ?? createLogger(config.log.level)
  container.bind<Logger>(Logger).toConstantValue(logger)
  const adapters = options.adapters ?? (await createAdapters(config))
  const registry = new MapAdapterRegistry(adapters)
  container.bind<AdapterRegistry>(AdapterRegistry).toConstantValue(registry)
  const configured = config.execution.adapter === 'auto' ? undefined : config.execution.adapter
  const breakers = new CircuitBreakers(config.routing.breaker)
  const board = new HealthBoard(config.readiness)
  const readiness = new ReadinessMonitor(registry, board, breakers, { ...config.readiness, configuredAdapter: configured, futureAdapter: config.execution.futureAdapter || undefined }, logger)
  container.bind<Readiness>(Readiness).toConstantValue(readiness)
  const router = new ConfigRouter(registry, config.execution.adapter, {
    fallbackChain: config.execution.fallback,
    tierOrder: config.routing.tierOrder as Tier[],
    binding: readiness,
    health: board,
    breakers,
  })
  container.bind<Router>(Router).toConstantValue(router)
  const { queue, ...admissionSettings } = config.admission
  const admission = new AdmissionController({ ...admissionSettings, queueLimits: queue }, adapters)
  container.bind<Admission>(Admission).toConstantValue(admission)
  container.bind<ExecutionService>(ExecutionService).toDynamicValue((context) => {
    const listeners = context.getAll<ExecutionListener>(ExecutionListener, { optional: true })
    return new DefaultExecutionService({
      registry,
      router: context.get<Router>(Router),
      basePolicy: policyFromConfig(config),
      profiles: profilesFromConfig(config),
      languageProfiles: config.security.languageProfiles,
      logger,
      listeners,
      graceMs: config.execution.graceMs,
      workspaceLimits: config.workspace,
      sessions: config.sessions,
      hostFunctions: options.hostFunctions,
      admission,
    })
  }).inSingletonScope()
  return container
}
