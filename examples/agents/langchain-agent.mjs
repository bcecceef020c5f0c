// A LangChain.js agent loop with execgate's code tool, bound to a session (variables persist between calls). With
// OPENAI_API_KEY set and @langchain/openai installed it uses ChatOpenAI; otherwise a scripted chat model (on
// LangChain's BaseChatModel, as its fakes are) plays the LLM's part.
import { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages'
import { executeCodeTool } from 'execgate/langchain'
import { QUESTION, SCRIPTED_CALL, connect, scriptedAnswer } from './connect.mjs'

class ScriptedChatModel extends BaseChatModel {
  _llmType() {
    return 'scripted'
  }
  bindTools() {
    return this
  }
  async _generate(messages) {
    const result = messages.find((message) => ToolMessage.isInstance(message))
    const message = result
      ? new AIMessage(scriptedAnswer(result.content))
      : new AIMessage({ content: '', tool_calls: [{ id: 'call-1', name: 'execute_code', args: SCRIPTED_CALL, type: 'tool_call' }] })
    return { generations: [{ text: String(message.content), message }] }
  }
}

async function chatModel() {
  if (!process.env.OPENAI_API_KEY) return new ScriptedChatModel({})
  const { ChatOpenAI } = await import('@langchain/openai')
  return new ChatOpenAI({ model: process.env.AGENT_MODEL ?? 'gpt-5-mini' })
}

const { execgate, where, close } = await connect()
try {
  const codeTool = executeCodeTool({ execgate, sessionId: `langchain-example-${process.pid}` })
  const model = (await chatModel()).bindTools([codeTool])
  const messages = [new HumanMessage(QUESTION)]
  let toolCalls = 0
  for (let turn = 0; turn < 5; turn++) {
    const reply = await model.invoke(messages)
    messages.push(reply)
    if (!reply.tool_calls?.length) break
    for (const call of reply.tool_calls) {
      toolCalls++
      messages.push(await codeTool.invoke(call))
    }
  }
  console.log(JSON.stringify({ framework: 'langchain', where, toolCalls, answer: String(messages.at(-1).content) }))
} finally {
  await close()
}
