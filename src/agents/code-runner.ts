import type { ExecutionRequest, ExecutionResult, Language, SecurityPolicy, ValidationReport } from '../core'
import type { ExecuteOptions } from '../execution/types'

/**
 * What the agents need of an execgate: run, validate, and the configured default policy (its imports go into the
 * generator's prompt). An `Execgate` (src/index.ts) is one; naming only this keeps the agents below the
 * composition root that builds it.
 */
export interface CodeRunner {
  execute(request: ExecutionRequest, options?: ExecuteOptions): Promise<ExecutionResult>
  validate(code: string, language: Language): Promise<ValidationReport>
  readonly config: { readonly security: { readonly defaultPolicy: Pick<SecurityPolicy, 'allowedImports'> } }
}
