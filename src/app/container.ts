import 'reflect-metadata'
import { Container, type ContainerModule } from 'inversify'
import { ADAPTERS } from '../../adapters/registry'
import { ExecgateError, describeError, type AdapterRegistry, type CodeExecutionAdapter } from '../core'
import { loadConfig, type Config, type LoadConfigOptions } from '../config/load'
import { checkFabricConfig } from './fabric-wiring'
import {
  adapterModules,
  configModule,
  executionModule,
  fabricStoresModule,
  ledgerModule,
  loggingModule,
  readinessModule,
  routingModule,
} from './container-modules'
import { createLogger, type Logger } from '../observability/logger'
import * as tokens from './tokens'
import { CountedContainer } from './counted-container'
import type { HostFunctionDefinition } from '../workspace'

export interface ContainerOptions extends LoadConfigOptions {
  /** An already-loaded config; skips loading. */
  config?: Config
  /** Adapters to use instead of creating them from the registry (tests with a deliberately failing adapter). */
  adapters?: readonly CodeExecutionAdapter[]
  logger?: Logger
  /** Host functions offered to every run besides the standard ones; each is checked at start-up. */
  hostFunctions?: readonly HostFunctionDefinition[]
  /**
   * Modules of your own, loaded after execgate's: bind an `ExecutionListener`, or rebind a token
   * (`rebindSync(adapterToken('quickjs'))`, `rebindSync(Router)`) to a class of your own.
   */
  modules?: readonly ContainerModule[]
  /**
   * false: start no adapter worker or interpreter until it is needed (`execgate.ready()`, or the first run on it).
   * @default true
   */
  warmOnStart?: boolean
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

/** An unknown or not-enabled adapter name stops start-up, naming the key, the value and what is allowed. */
function checkAdapterNames(config: Config): void {
  const known = Object.keys(ADAPTERS)
  for (const key of ['execution.enabled', 'execution.fallback', 'execution.adapter', 'execution.futureAdapter'] as const) {
    const value =
      key === 'execution.enabled'
        ? config.execution.enabled
        : key === 'execution.fallback'
          ? config.execution.fallback
          : [key === 'execution.adapter' ? config.execution.adapter : config.execution.futureAdapter]
    const unknown = value.filter((name) => name && name !== 'auto' && !known.includes(name))
    if (unknown.length > 0) {
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
        detail: `${key}: unknown adapter "${unknown[0]}"; known adapters: ${known.join(', ')}: value was ${JSON.stringify(value)}`,
      })
    }
  }
  const pinned = config.execution.adapter
  if (pinned !== 'auto' && !config.execution.enabled.includes(pinned)) {
    throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
      detail: `execution.adapter: "${pinned}" is not in execution.enabled (${config.execution.enabled.join(', ')})`,
    })
  }
  for (const key of ['execution.futureAdapter', 'execution.fallback'] as const) {
    const names = key === 'execution.fallback' ? config.execution.fallback : [config.execution.futureAdapter].filter(Boolean)
    const missing = names.filter((name) => !config.execution.enabled.includes(name))
    if (missing.length > 0) {
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
        detail: `${key}: "${missing[0]}" is not in execution.enabled (${config.execution.enabled.join(', ')})`,
      })
    }
  }
}

/** Resolves the enabled adapters' tokens, in `execution.enabled` order; a failure disposes those already created. */
async function resolveAdapters(container: Container, config: Config): Promise<CodeExecutionAdapter[]> {
  const adapters: CodeExecutionAdapter[] = []
  for (const name of config.execution.enabled) {
    try {
      adapters.push(await container.getAsync<CodeExecutionAdapter>(tokens.adapterToken(name)))
    } catch (error) {
      await Promise.allSettled(adapters.map((adapter) => adapter.dispose()))
      if (error instanceof ExecgateError) throw error
      throw new ExecgateError(
        'EXECGATE_CONFIG_INVALID',
        { detail: `adapter ${name} could not be created: ${describeError(error)}` },
        { cause: error },
      )
    }
  }
  return adapters
}

/**
 * Builds the DI container from one module per feature (config, logging, readiness, routing, execution, ledger) and one
 * per adapter, then the caller's modules; resolves the enabled adapters and binds the registry over them.
 */
export async function createContainer(options: ContainerOptions = {}): Promise<Container> {
  const config = options.config ?? loadConfig(options)
  if (!options.adapters) checkAdapterNames(config)
  checkFabricConfig(config)
  const container = new CountedContainer()
  const logger = options.logger ?? createLogger(config.log.level)
  container.loadSync(
    configModule(config),
    loggingModule(logger),
    ...adapterModules(config, options.warmOnStart ?? true),
    readinessModule(config),
    routingModule(config),
    executionModule(container, config, options.hostFunctions),
    ledgerModule(config, logger),
    fabricStoresModule(config),
  )
  if (options.modules?.length) await container.load(...options.modules)
  const adapters = options.adapters ?? (await resolveAdapters(container, config))
  container.bind<AdapterRegistry>(tokens.AdapterRegistry).toConstantValue(new MapAdapterRegistry(adapters))
  return container
}
