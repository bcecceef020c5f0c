import type { BedrockAgentCoreClient } from '@aws-sdk/client-bedrock-agentcore'
import type { OptionSchema } from '../shared/option-schema'

/** The `adapters.bedrock` config section. */
export interface BedrockOptions {
  /** AWS region of the AgentCore endpoint. */
  region: string
  /** An endpoint URL instead of AWS's (a local server speaking the protocol, a VPC endpoint). */
  endpoint: string
  /** The code interpreter: AWS's managed one, or the id or ARN of your own. */
  codeInterpreter: string
  /** How long AWS keeps an interpreter session alive without calls. */
  sessionTimeoutSeconds: number
  /** execgate stops a reused session after this long without a call. */
  idleSessionMs: number
}

/** What `new BedrockAdapter()` takes: any config option (the rest default) and, for tests, an AgentCore client. */
export type BedrockAdapterOptions = Partial<BedrockOptions> & { client?: BedrockAgentCoreClient }

export const BEDROCK_OPTIONS_SCHEMA: OptionSchema<BedrockOptions> = {
  region: { doc: 'AWS region for AgentCore', format: String, default: 'us-east-1', env: 'EXECGATE_ADAPTERS_BEDROCK_REGION' },
  endpoint: { doc: 'Endpoint URL instead of AWS (empty: AWS)', format: String, default: '', env: 'EXECGATE_ADAPTERS_BEDROCK_ENDPOINT' },
  codeInterpreter: {
    doc: 'Code interpreter identifier',
    format: String,
    default: 'aws.codeinterpreter.v1',
    env: 'EXECGATE_ADAPTERS_BEDROCK_CODE_INTERPRETER',
  },
  sessionTimeoutSeconds: {
    doc: 'AgentCore session timeout (s)',
    format: 'positive-int',
    default: 900,
    env: 'EXECGATE_ADAPTERS_BEDROCK_SESSION_TIMEOUT_SECONDS',
  },
  idleSessionMs: {
    doc: 'Idle time before execgate stops a session (ms)',
    format: 'positive-int',
    default: 300_000,
    env: 'EXECGATE_ADAPTERS_BEDROCK_IDLE_SESSION_MS',
  },
}
