import type { Container } from 'inversify'
import { createContainer, type ContainerOptions } from './container'
import { ExecgateError, type CodeExecutionAdapter, type ExecutionRequest, type ExecutionResult, type Language, type SecurityPolicy, type Tier, type ValidationReport } from './core'
import { explainPolicy, policyFromConfig, profilesFromConfig, type PolicyExplanation } from './policy'
import type { AdapterHealth } from './readiness/health'
import type { SwitchEvent } from './readiness/readiness-monitor'
import type { BreakerState } from './routing/circuit-breaker'
import type { AdmissionStatus } from './execution/admission/admission-controller'
import { Admission, AdapterRegistry, Config, ExecutionService, Readiness, type ExecuteOptions } from './tokens'

export * from './core'
export { loadConfig, type Config as LoadedConfig, type LoadConfigOptions } from './config/load'
export type { ExecgateConfig } from './config/schema'
export { resolvePolicy, staticValidationReport, DEFAULT_POLICY, checkJavaScript, checkTypeScript, explainPolicy, type PolicyExplanation } from './policy'
export type { SwitchEvent, HealthEvent } from './readiness/readiness-monitor'
export { createContainer, type ContainerOptions } from './container'
export type { AdmissionStatus, AdapterAdmissionStatus } from './execution/admission/admission-controller'
export * as tokens from './tokens'
export * from './workspace'

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
  /** The readiness monitor, for its `switch` and `health` events. */
  readonly readiness: Readiness
  readonly config: Config
  readonly container: Container
  dispose(): Promise<void>
}

export interface AdapterStatus {
  name: string
  tier: Tier
  languages: readonly Language[]
  health: AdapterHealth
  breaker: BreakerState
}

export interface ExecgateStatus {
  /** The adapter requests without a pin go to; `auto` when routing picks the cheapest available. */
  active: string
  lastSwitch?: SwitchEvent
  adapters: AdapterStatus[]
  /** Slots in use per lane and queue depth of every adapter, and the in-process batch bound. */
  admission: AdmissionStatus
}

/** Loads config, creates the enabled adapters and returns a ready execgate (its readiness monitor scheduled). */
export async function createExecgate(options: ContainerOptions = {}): Promise<Execgate> {
  const container = await createContainer(options)
  const service = container.get<ExecutionService>(ExecutionService)
  const registry = container.get<AdapterRegistry>(AdapterRegistry)
  const readiness = container.get<Readiness>(Readiness)
  const config = container.get<Config>(Config)
  const admission = container.get<Admission>(Admission)
  if (config.readiness.enabled) readiness.start()
  const status = (): ExecgateStatus => ({
    active: readiness.active() ?? 'auto',
    ...(readiness.lastSwitch() ? { lastSwitch: readiness.lastSwitch() } : {}),
    adapters: registry.list().map((adapter) => ({
      name: adapter.name,
      tier: adapter.capabilities.tier,
      languages: adapter.supportedLanguages(),
      health: readiness.health(adapter.name),
      breaker: readiness.breaker(adapter.name),
    })),
    admission: admission.status(),
  })
  let disposed = false
  return {
    execute: (request, executeOptions) => service.execute(request, executeOptions),
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
      if (!adapter) throw new ExecgateError('EXECGATE_ADAPTER_UNKNOWN', { name: adapterName, known: registry.list().map((item) => item.name).join(', ') })
      let resolved: SecurityPolicy
      if (typeof policy === 'string') {
        const profiles = profilesFromConfig(config)
        if (!profiles[policy]) throw new ExecgateError('EXECGATE_PROFILE_UNKNOWN', { name: policy, known: Object.keys(profiles).join(', ') || 'none' })
        resolved = profiles[policy]!
      } else {
        resolved = policy ?? policyFromConfig(config)
      }
      return explainPolicy(resolved, adapter)
    },
    async closeSession(sessionId) {
      const closed = await Promise.all(registry.list().map((adapter) => adapter.closeSession?.(sessionId) ?? false))
      const workspace = service.closeSession?.(sessionId) ?? false
      return closed.some(Boolean) || workspace
    },
    readiness,
    config,
    container,
    async dispose() {
      if (disposed) return
      disposed = true
      // Queued runs are answered (unavailable, with a retry hint) and running ones finish before adapters go.
      await service.dispose?.()
      await readiness.stop()
      await Promise.allSettled(registry.list().map((adapter) => adapter.dispose()))
    },
  }
}
