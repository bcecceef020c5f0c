import { formats } from '../formats'

export interface BedrockOptionsConfig {
  /** AWS region of the AgentCore endpoint. @default 'us-east-1' @env EXECGATE_ADAPTERS_BEDROCK_REGION */
  region: string
  /** An endpoint URL instead of AWS's (a local server speaking the protocol, a VPC endpoint). @default '' @env EXECGATE_ADAPTERS_BEDROCK_ENDPOINT */
  endpoint: string
  /** The code interpreter: AWS's managed one, or the id or ARN of your own. @default 'aws.codeinterpreter.v1' @env EXECGATE_ADAPTERS_BEDROCK_CODE_INTERPRETER */
  codeInterpreter: string
  /** How long AWS keeps an interpreter session alive without calls. @default 900 @env EXECGATE_ADAPTERS_BEDROCK_SESSION_TIMEOUT_SECONDS */
  sessionTimeoutSeconds: number
  /** execgate stops a reused session after this long without a call. @default 300000 @env EXECGATE_ADAPTERS_BEDROCK_IDLE_SESSION_MS */
  idleSessionMs: number
}

export const bedrockSchema = {
  region: { doc: 'AWS region for AgentCore', format: String, default: 'us-east-1' },
  endpoint: { doc: 'Endpoint URL instead of AWS (empty: AWS)', format: String, default: '' },
  codeInterpreter: { doc: 'Code interpreter identifier', format: String, default: 'aws.codeinterpreter.v1' },
  sessionTimeoutSeconds: { doc: 'AgentCore session timeout (s)', format: formats.positiveInt, default: 900 },
  idleSessionMs: { doc: 'Idle time before execgate stops a session (ms)', format: formats.positiveInt, default: 300_000 },
}
