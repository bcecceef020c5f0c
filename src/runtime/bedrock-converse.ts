import type { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime'
import type { LlmProvider, LlmRequest } from '../core/llm'
import { importOptional } from '../core/optional-dependency'

export interface BedrockConverseOptions {
  /** A Bedrock model id or inference profile. */
  modelId: string
  region?: string
  /** An endpoint URL instead of AWS's (a local server speaking Converse; over HTTP/1.1 when it is plain http://). */
  endpoint?: string
  /** An SDK client to use (tests give one with an HTTP/1.1 handler). */
  client?: BedrockRuntimeClient
}

/**
 * Amazon Bedrock's Converse API through `@aws-sdk/client-bedrock-runtime`; credentials from the AWS chain. The SDK is
 * loaded only when the provider first answers, so importing this costs nothing.
 */
export class BedrockConverseProvider implements LlmProvider {
  private client?: BedrockRuntimeClient

  constructor(private readonly options: BedrockConverseOptions) {}

  async complete(request: LlmRequest): Promise<string> {
    const sdk = await importOptional('bedrock-llm', () => import('@aws-sdk/client-bedrock-runtime'))
    this.client ??= this.options.client ?? (await this.clientFor(sdk))
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

  private async clientFor(sdk: typeof import('@aws-sdk/client-bedrock-runtime')): Promise<BedrockRuntimeClient> {
    const { endpoint, region = 'us-east-1' } = this.options
    if (!endpoint) return new sdk.BedrockRuntimeClient({ region })
    // The SDK speaks HTTP/2 to Bedrock; a local server on plain http:// (a proxy, an emulator) speaks HTTP/1.1.
    const requestHandler = endpoint.startsWith('http://')
      ? new (await importOptional('bedrock-llm', () => import('@smithy/node-http-handler'))).NodeHttpHandler()
      : undefined
    return new sdk.BedrockRuntimeClient({ region, endpoint, ...(requestHandler ? { requestHandler } : {}) })
  }
}
