import type { Container } from 'inversify'
import { createContainer, type ContainerOptions } from './container'
import type { CodeExecutionAdapter, ExecutionRequest, ExecutionResult, Language, ValidationReport } from './core'
import { AdapterRegistry, Config, ExecutionService, type ExecuteOptions } from './tokens'

export * from './core'
export { loadConfig, type Config as LoadedConfig, type LoadConfigOptions } from './config/load'
export type { ExecgateConfig } from './config/schema'
export { resolvePolicy, staticValidationReport, DEFAULT_POLICY, checkJavaScript, checkTypeScript } from './policy'
export { createContainer, type ContainerOptions } from './container'
export * as tokens from './tokens'

/** The library's face: one object that runs code, validates it and reports on its adapters. */
export interface Execgate {
  execute(request: ExecutionRequest, options?: ExecuteOptions): Promise<ExecutionResult>
  validate(code: string, language: Language, adapter?: string): Promise<ValidationReport>
  languages(): readonly Language[]
  adapters(): readonly CodeExecutionAdapter[]
  readonly config: Config
  readonly container: Container
  dispose(): Promise<void>
}

/** Loads config, creates the enabled adapters and returns a ready execgate. */
export async function createExecgate(options: ContainerOptions = {}): Promise<Execgate> {
  const container = await createContainer(options)
  const service = container.get<ExecutionService>(ExecutionService)
  const registry = container.get<AdapterRegistry>(AdapterRegistry)
  let disposed = false
  return {
    execute: (request, executeOptions) => service.execute(request, executeOptions),
    validate: (code, language, adapter) => service.validate(code, language, adapter),
    languages: () => service.languages(),
    adapters: () => registry.list(),
    config: container.get<Config>(Config),
    container,
    async dispose() {
      if (disposed) return
      disposed = true
      await Promise.allSettled(registry.list().map((adapter) => adapter.dispose()))
    },
  }
}
