/**
 * The language model behind the agents: the `LlmProvider` contract and Bedrock Converse. Both live in src/core/llm.ts,
 * below every layer that needs a model (a run's `ask_llm`, the plan engine's reflector, the agents here).
 */
export { BedrockConverseProvider, type BedrockConverseOptions, type LlmMessage, type LlmProvider, type LlmRequest } from '../core/llm'
