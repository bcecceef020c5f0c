/**
 * `execgate/agents`: what a voice or chat agent builds on. The handler turns a computation request into a sentence
 * (speech-ready for voice), the generator asks an LLM for code and retries with the error, the retry strategy spaces
 * attempts, and the Bedrock provider is one LLM behind the `LlmProvider` interface. The continuation store and the
 * speech helpers behind the handler are not part of this entry point.
 */
export { CodeExecutionHandler, type ComputationRequest, type ComputationResponse, type HandlerOptions } from './handler'
export { CodeGenerator, CodeGenerationError, extractCode, type GenerateOptions, type GeneratedCode } from './code-generator'
export { RetryStrategy, type Backoff, type RetryOptions } from './retry'
export { BedrockConverseProvider, type BedrockConverseOptions, type LlmMessage, type LlmProvider } from './llm'
export type { CodeRunner } from './code-runner'
