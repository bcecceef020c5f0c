import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime'

export interface LlmMessage {
  role: 'user' | 'assistant'
  text: string
}

/** A language model, as the code generator needs one. Bedrock Converse is the real one. */
export interface LlmProvider {
  complete(request: { system: string; messages: readonly LlmMessage[]; maxTokens?: number; signal?: AbortSignal }): Promise<string>
}

export interface BedrockConverseOptions {
  /** A Bedrock model id or inference profile. */
  modelId: string
  region?: string
  /** An endpoint URL instead of AWS's (a local server speaking Converse). */
  endpoint?: string
  /** An SDK client to use (tests give one with an HTTP/1.1 handler). */
  client?: BedrockRuntimeClient
}

/** Amazon Bedrock's Converse API through `@aws-sdk/client-bedrock-runtime`; credentials from the AWS chain. */
export class BedrockConverseProvider implements LlmProvider {
  private client?: BedrockRuntimeClient

  constructor(private readonly options: BedrockConverseOptions) {}

  async complete(request: { system: string; messages: readonly LlmMessage[]; maxTokens?: number; signal?: AbortSignal }): Promise<string> {
    const sdk = await import('@aws-sdk/client-bedrock-runtime')
    this.client ??= this.options.client ?? new sdk.BedrockRuntimeClient({ region: this.options.region ?? 'us-east-1', ...(this.options.endpoint ? { endpoint: this.options.endpoint } : {}) })
    const response = await this.client.send(
      new sdk.ConverseCommand({
        modelId: this.options.modelId,
        system: [{ text: request.system }],
        messages: request.messages.map((message) => ({ role: message.role, content: [{ text: message.text }] })),
        inferenceConfig: { maxTokens: request.maxTokens ?? 1024, temperature: 0 },
      }),
      { abortSignal: request.signal },
    )
    const text = (response.output?.message?.content ?? []).map((block) => block.text ?? '').join('')
    if (!text) throw new Error(`the model answered without text (stop reason: ${response.stopReason ?? 'unknown'})`)
    return text
  }
}
