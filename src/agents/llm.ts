/**
 * The language model behind the agents: the `LlmProvider` contract (src/core/llm.ts) and Bedrock Converse
 * (src/runtime/bedrock-converse.ts), both below every layer that needs a model (a run's `ask_llm`, the plan engine's
 * reflector, the agents here).
 */
export type { LlmMessage, LlmProvider, LlmRequest } from '../core/llm'
export { BedrockConverseProvider, type BedrockConverseOptions } from '../runtime/bedrock-converse'
