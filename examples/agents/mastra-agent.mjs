// A Mastra agent with execgate's code tool. With OPENAI_API_KEY set it uses Mastra's model router
// (AGENT_MODEL, default openai/gpt-4o-mini); otherwise a scripted AI SDK LanguageModelV2 plays the LLM's part.
import { Agent } from '@mastra/core/agent'
import { executeCodeTool } from 'execgate/mastra'
import { QUESTION, SCRIPTED_CALL, connect, scriptedAnswer } from './connect.mjs'

const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 }
const stream = (parts) => ({
  stream: new ReadableStream({
    start(controller) {
      for (const part of [{ type: 'stream-start', warnings: [] }, ...parts]) controller.enqueue(part)
      controller.close()
    },
  }),
})
const toolResult = (prompt) =>
  prompt.flatMap((message) => (message.role === 'tool' ? message.content : [])).find((part) => part.type === 'tool-result')
const scripted = {
  specificationVersion: 'v2',
  provider: 'scripted',
  modelId: 'scripted',
  supportedUrls: {},
  async doGenerate({ prompt }) {
    const result = toolResult(prompt)
    if (!result)
      return {
        content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'execute_code', input: JSON.stringify(SCRIPTED_CALL) }],
        finishReason: 'tool-calls',
        usage,
        warnings: [],
      }
    return { content: [{ type: 'text', text: scriptedAnswer(result.output.value) }], finishReason: 'stop', usage, warnings: [] }
  },
  async doStream({ prompt }) {
    const result = toolResult(prompt)
    if (!result)
      return stream([
        { type: 'tool-call', toolCallId: 'call-1', toolName: 'execute_code', input: JSON.stringify(SCRIPTED_CALL) },
        { type: 'finish', finishReason: 'tool-calls', usage },
      ])
    const text = scriptedAnswer(result.output.value)
    return stream([
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: text },
      { type: 'text-end', id: 't' },
      { type: 'finish', finishReason: 'stop', usage },
    ])
  },
}

const { execgate, where, close } = await connect()
try {
  const agent = new Agent({
    name: 'bookkeeper',
    instructions: 'Compute with the execute_code tool, never by estimating.',
    model: process.env.OPENAI_API_KEY ? (process.env.AGENT_MODEL ?? 'openai/gpt-4o-mini') : scripted,
    tools: { execute_code: executeCodeTool({ execgate }) },
  })
  const result = await agent.generate(QUESTION, { maxSteps: 5 })
  console.log(JSON.stringify({ framework: 'mastra', where, toolCalls: result.toolCalls.length, answer: result.text }))
} finally {
  await close()
}
