import { BaseChatModel } from '@langchain/core/language_models/chat_models'
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages'
import type { ChatResult } from '@langchain/core/outputs'
import type { StructuredToolInterface } from '@langchain/core/tools'
import { convertToOpenAITool } from '@langchain/core/utils/function_calling'
import { executeCodeTool } from '../../src/tools/langchain'
import type { CodeToolOptions } from '../../src/tools/code-tool'
import { IMAGE_CALL, SANDBOX_CALLS, SESSION_CALLS, SUM_CALL, SVG_BASE64, startToolBackends, type ToolBackends } from './tool-harness'

/**
 * execgate/langchain in LangChain's tool-calling loop: a chat model with bound tools answers with tool_calls, each
 * call goes through `tool.invoke(toolCall)` (which yields the ToolMessage LangChain sends back), and the model answers
 * from the ToolMessages it was sent. The model is scripted on LangChain's BaseChatModel, as its own fakes are (its
 * FakeStreamingChatModel answers the same message to every turn, so it cannot ask for a second call).
 */

let backends: ToolBackends
beforeAll(async () => {
  backends = await startToolBackends()
}, 60_000)
afterAll(() => backends?.stop())

class ScriptedChatModel extends BaseChatModel {
  readonly boundTools: unknown[] = []
  constructor(private readonly calls: readonly { language: string; code: string }[]) {
    super({})
  }
  _llmType(): string {
    return 'scripted'
  }
  override bindTools(tools: StructuredToolInterface[]) {
    this.boundTools.push(...tools.map((item) => convertToOpenAITool(item)))
    return this.withConfig({})
  }
  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const results = messages.filter((message) => ToolMessage.isInstance(message))
    const message =
      results.length < this.calls.length
        ? new AIMessage({
            content: '',
            tool_calls: [{ id: `call-${results.length + 1}`, name: 'execute_code', args: this.calls[results.length]!, type: 'tool_call' }],
          })
        : new AIMessage(`the tool said ${String(results.at(-1)!.content)}`)
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] }
  }
}

/** LangChain's manual agent loop: invoke the bound model, run each tool call through the tool, until it answers. */
async function loop(options: CodeToolOptions, calls: readonly { language: string; code: string }[]) {
  const codeTool = executeCodeTool(options)
  const model = new ScriptedChatModel(calls)
  const bound = model.bindTools([codeTool])
  const messages: BaseMessage[] = [new HumanMessage('compute it')]
  const toolMessages: ToolMessage[] = []
  for (let turn = 0; turn < calls.length + 2; turn++) {
    const reply = (await bound.invoke(messages)) as AIMessage
    messages.push(reply)
    if (!reply.tool_calls?.length) return { answer: String(reply.content), model, toolMessages }
    for (const call of reply.tool_calls) {
      const toolMessage = (await codeTool.invoke(call)) as ToolMessage
      toolMessages.push(toolMessage)
      messages.push(toolMessage)
    }
  }
  throw new Error('the loop did not end')
}

describe.each(['in-process', 'remote'] as const)('execgate/langchain (%s)', (mode) => {
  const runner = () => backends.modes.find((item) => item.name === mode)!.runner()

  test("the model's call runs; the ToolMessage carries the answer as content and the result as artifact", async () => {
    const { answer, model, toolMessages } = await loop({ execgate: runner() }, [SUM_CALL])
    expect(toolMessages[0]).toMatchObject({
      tool_call_id: 'call-1',
      name: 'execute_code',
      content: '{"status":"ok","output":"orders: 2\\n","value":42}',
    })
    expect(toolMessages[0]!.artifact).toMatchObject({ status: 'ok', value: 42, adapter: 'monty', runId: expect.any(String) })
    expect(answer).toBe('the tool said {"status":"ok","output":"orders: 2\\n","value":42}')
    expect(model.boundTools[0]).toMatchObject({
      type: 'function',
      function: { name: 'execute_code', parameters: { required: ['language', 'code'] } },
    })
  })

  test('code that raises comes back as status error with the exception', async () => {
    const { toolMessages } = await loop({ execgate: runner() }, [{ language: 'python', code: 'int("forty-two")' }])
    expect(JSON.parse(String(toolMessages[0]!.content))).toMatchObject({ status: 'error', error: expect.stringContaining('ValueError') })
  })

  test('a bound session keeps variables between calls', async () => {
    const { toolMessages } = await loop({ execgate: runner(), sessionId: `langchain-${mode}` }, SESSION_CALLS)
    expect(JSON.parse(String(toolMessages[1]!.content))).toMatchObject({ status: 'ok', value: 42 })
  })

  test('a bound sandbox keeps files between calls', async () => {
    const sandbox = await backends.modes.find((item) => item.name === mode)!.startSandbox()
    try {
      const { toolMessages } = await loop({ sandbox }, SANDBOX_CALLS)
      expect(JSON.parse(String(toolMessages[1]!.content))).toMatchObject({ status: 'ok', output: '42\n' })
    } finally {
      await sandbox.stop()
    }
  })

  test('an image the run drew is an image_url block of the ToolMessage the model reads next', async () => {
    const { toolMessages } = await loop({ execgate: runner() }, [IMAGE_CALL])
    expect(toolMessages[0]!.content).toEqual([
      { type: 'text', text: expect.stringContaining('"status":"ok"') },
      { type: 'image_url', image_url: { url: `data:image/svg+xml;base64,${SVG_BASE64}` } },
    ])
    expect(toolMessages[0]!.artifact).toMatchObject({ outputs: [{ kind: 'image', mimeType: 'image/svg+xml', data: SVG_BASE64 }] })
  })
})
