// A Vercel AI SDK agent with execgate's code tool. With AI_GATEWAY_API_KEY set it asks a real model through the AI
// Gateway (AGENT_MODEL, default openai/gpt-5-mini); otherwise a scripted model plays the LLM's part.
import { generateText, stepCountIs } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { executeCodeTool } from 'execgate/ai-sdk'
import { QUESTION, SCRIPTED_CALL, connect, scriptedAnswer } from './connect.mjs'

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } }
const scripted = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const result = prompt.flatMap((message) => (message.role === 'tool' ? message.content : [])).find((part) => part.type === 'tool-result')
    if (!result)
      return {
        content: [{ type: 'tool-call', toolCallId: 'call-1', toolName: 'execute_code', input: JSON.stringify(SCRIPTED_CALL) }],
        finishReason: { unified: 'tool-calls' },
        usage,
        warnings: [],
      }
    return {
      content: [{ type: 'text', text: scriptedAnswer(JSON.stringify(result.output.value)) }],
      finishReason: { unified: 'stop' },
      usage,
      warnings: [],
    }
  },
})

const { execgate, where, close } = await connect()
try {
  const { text, steps } = await generateText({
    model: process.env.AI_GATEWAY_API_KEY ? (process.env.AGENT_MODEL ?? 'openai/gpt-5-mini') : scripted,
    tools: { execute_code: executeCodeTool({ execgate }) },
    stopWhen: stepCountIs(5),
    prompt: QUESTION,
  })
  console.log(JSON.stringify({ framework: 'ai-sdk', where, toolCalls: steps.flatMap((step) => step.toolCalls).length, answer: text }))
} finally {
  await close()
}
