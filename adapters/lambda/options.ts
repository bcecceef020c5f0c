import type { LambdaClient } from '@aws-sdk/client-lambda'
import type { OptionSchema } from '../shared/option-schema'

/** The `adapters.lambda` config section. */
export interface LambdaOptions {
  /** The function's name or ARN (see deploy/lambda). */
  functionName: string
  /** A version or alias; empty for $LATEST. */
  qualifier: string
  region: string
  /** An endpoint URL instead of AWS's (serverless-offline, a VPC endpoint). */
  endpoint: string
  /**
   * Time past the policy's wall time execgate waits for the function's answer (its cold start, the network) before it
   * answers timeout; the function enforces the wall time itself, so this only bounds a function that cannot answer.
   */
  invokeSlackMs: number
}

/** What `new LambdaAdapter()` takes: any config option (the rest default) and, for tests, a Lambda client. */
export type LambdaAdapterOptions = Partial<LambdaOptions> & { client?: LambdaClient }

export const LAMBDA_OPTIONS_SCHEMA: OptionSchema<LambdaOptions> = {
  functionName: {
    doc: 'Lambda function name or ARN',
    format: String,
    default: 'execgate-dev-execute',
    env: 'EXECGATE_ADAPTERS_LAMBDA_FUNCTION_NAME',
  },
  qualifier: { doc: 'Lambda version or alias (empty: $LATEST)', format: String, default: '', env: 'EXECGATE_ADAPTERS_LAMBDA_QUALIFIER' },
  region: { doc: 'AWS region for Lambda', format: String, default: 'us-east-1', env: 'EXECGATE_ADAPTERS_LAMBDA_REGION' },
  endpoint: { doc: 'Endpoint URL instead of AWS (empty: AWS)', format: String, default: '', env: 'EXECGATE_ADAPTERS_LAMBDA_ENDPOINT' },
  invokeSlackMs: {
    doc: "Time past the policy's wall time to wait for the function's answer: cold start, network (ms)",
    format: 'positive-int',
    default: 10_000,
    env: 'EXECGATE_ADAPTERS_LAMBDA_INVOKE_SLACK_MS',
  },
}
