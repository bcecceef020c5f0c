/**
 * A language model, as execgate uses one: a run's `ask_llm`, the code generator (src/agents) and the plan engine's
 * reflector (src/fabric/plans). The contract is here, in src/core, so every layer may name it; Bedrock Converse
 * (src/runtime/bedrock-converse.ts) is the production one.
 */

export interface LlmMessage {
  role: 'user' | 'assistant'
  text: string
}

export interface LlmRequest {
  system: string
  messages: readonly LlmMessage[]
  maxTokens?: number
  signal?: AbortSignal
}

/** A language model: one system prompt and a conversation in, the answer's text out. */
export interface LlmProvider {
  complete(request: LlmRequest): Promise<string>
}
