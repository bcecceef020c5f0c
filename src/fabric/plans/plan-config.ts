import type { LlmProvider } from '../../core'
import { BedrockConverseProvider } from '../../runtime/bedrock-converse'
import type { FabricSettings } from '../tasks'
import type { PlanServiceOptions } from './plan-service'
import { Reflector } from './reflector'

/** The `fabric.plans` config keys (src/config/schema.ts documents each). */
export interface PlanConfig {
  maxRevisions: number
  maxSteps: number
  stepWorkspaceAccess: 'none' | 'read_only' | 'sandboxed'
  workspaces: 'memory' | 's3'
  reflector: { modelId: string; region: string; endpoint: string; maxTokens: number }
}

/**
 * The plan service's options from config, so the library, `serve` and the CLI drive plans alike. The reflector is
 * `llm` when given (a caller's own model), else Bedrock Converse when `fabric.plans.reflector.modelId` names a model,
 * else none: a failed step then fails its plan at once.
 */
export function planServiceOptionsFrom(
  fabric: Pick<FabricSettings, 'leaseMs'> & {
    plans: PlanConfig
    s3: { bucket: string }
  },
  allowedImports: readonly string[],
  llm?: LlmProvider,
): Pick<PlanServiceOptions, 'settings' | 'reflector' | 'leaseMs'> {
  const { plans } = fabric
  const model =
    llm ??
    (plans.reflector.modelId
      ? new BedrockConverseProvider({
          modelId: plans.reflector.modelId,
          region: plans.reflector.region,
          ...(plans.reflector.endpoint ? { endpoint: plans.reflector.endpoint } : {}),
        })
      : undefined)
  return {
    // Bounds the driver and revision leases of a store that keeps them (src/fabric/plans/engine-lease.ts).
    leaseMs: fabric.leaseMs,
    settings: {
      maxRevisions: plans.maxRevisions,
      maxSteps: plans.maxSteps,
      ...(plans.stepWorkspaceAccess !== 'none' ? { workspaceAccess: plans.stepWorkspaceAccess } : {}),
      allowedImports,
      workspaces: plans.workspaces,
      bucket: fabric.s3.bucket !== '',
    },
    ...(model ? { reflector: new Reflector(model, { maxTokens: plans.reflector.maxTokens }) } : {}),
  }
}
