import http from 'node:http'

export interface RecordedConverse {
  modelId: string
  system: string
  messages: Array<{ role: string; text: string }>
}

/**
 * A local HTTP/1.1 server speaking Amazon Bedrock's Converse API (POST /model/{modelId}/converse) with scripted
 * replies, so the real @aws-sdk/client-bedrock-runtime client is exercised (given an HTTP/1.1 request handler,
 * since the SDK speaks HTTP/2 by default). Every request is recorded for the test to read the prompts.
 */
export class FakeConverse {
  readonly requests: RecordedConverse[] = []
  private server?: http.Server

  /** Replies in order; a function gets the request (and may take its time: a promise is awaited). */
  constructor(private readonly replies: Array<string | ((request: RecordedConverse) => string | Promise<string>)>) {}

  async listen(): Promise<string> {
    this.server = http.createServer((request, response) => void this.handle(request, response))
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve))
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }

  private async handle(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const chunk of request) chunks.push(chunk as Buffer)
    const match = /^\/model\/([^/]+)\/converse$/.exec(request.url ?? '')
    if (request.method !== 'POST' || !match) {
      response.writeHead(404, { 'content-type': 'application/json', 'x-amzn-errortype': 'ResourceNotFoundException' })
      response.end(JSON.stringify({ message: `no route ${request.method} ${request.url}` }))
      return
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      system?: Array<{ text: string }>
      messages: Array<{ role: string; content: Array<{ text?: string }> }>
    }
    const recorded: RecordedConverse = {
      modelId: decodeURIComponent(match[1]!),
      system: (body.system ?? []).map((block) => block.text).join('\n'),
      messages: body.messages.map((message) => ({ role: message.role, text: message.content.map((block) => block.text ?? '').join('') })),
    }
    this.requests.push(recorded)
    const reply = this.replies.shift()
    if (reply === undefined) {
      response.writeHead(429, { 'content-type': 'application/json', 'x-amzn-errortype': 'ThrottlingException' })
      response.end(JSON.stringify({ message: 'the script has no more replies' }))
      return
    }
    const text = typeof reply === 'function' ? await reply(recorded) : reply
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(
      JSON.stringify({
        output: { message: { role: 'assistant', content: [{ text }] } },
        stopReason: 'end_turn',
        usage: { inputTokens: 10, outputTokens: 10, totalTokens: 20 },
        metrics: { latencyMs: 1 },
      }),
    )
  }
}
