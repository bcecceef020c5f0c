import { generateText, stepCountIs, type ModelMessage } from 'ai'
import { MockLanguageModelV3 } from 'ai/test'
import { executeCodeTool } from '../../src/tools/ai-sdk'
import type { CodeToolOptions } from '../../src/tools/code-tool'
import { IMAGE_CALL, SANDBOX_CALLS, SESSION_CALLS, SUM_CALL, SVG_BASE64, startToolBackends, type ToolBackends } from './tool-harness'

/**
 * execgate/ai-sdk in the AI SDK's own tool-call loop: generateText with a scripted MockLanguageModelV3 that asks for
 * the given calls one after another, then answers from what the last tool result said (read from its prompt, as a
 * real model would). In-process and remote (ExecgateClient over loopback HTTP).
 */

let backends: ToolBackends
beforeAll(async () => {
  backends = await startToolBackends()
}, 60_000)
afterAll(() => backends?.stop())

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } }

/** A model that calls execute_code with each of `calls`, then says what the last result's output JSON was. */
function scriptedModel(calls: readonly { language: string; code: string }[]) {
  return new MockLanguageModelV3({
    doGenerate: async (options) => {
      const results = (options.prompt as ModelMessage[])
        .flatMap((message) => (message.role === 'tool' ? message.content : []))
        .filter((part) => part.type === 'tool-result')
      if (results.length < calls.length) {
        return {
          content: [
            {
              type: 'tool-call',
              toolCallId: `call-${results.length + 1}`,
              toolName: 'execute_code',
              input: JSON.stringify(calls[results.length]),
            },
          ],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        }
      }
      const last = results.at(-1)!.output as { type: string; value: unknown }
      return {
        content: [{ type: 'text', text: `the tool said ${JSON.stringify(last)}` }],
        finishReason: { unified: 'stop', raw: undefined },
        usage,
        warnings: [],
      }
    },
  })
}

async function loop(options: CodeToolOptions, calls: readonly { language: string; code: string }[]) {
  const model = scriptedModel(calls)
  const result = await generateText({
    model,
    tools: { execute_code: executeCodeTool(options) },
    stopWhen: stepCountIs(calls.length + 2),
    prompt: 'compute it',
  })
  return { result, model }
}

describe.each(['in-process', 'remote'] as const)('execgate/ai-sdk (%s)', (mode) => {
  const runner = () => backends.modes.find((item) => item.name === mode)!.runner()

  test("the model's call runs, and the model reads status, output and value as JSON", async () => {
    const { result, model } = await loop({ execgate: runner() }, [SUM_CALL])
    expect(result.steps).toHaveLength(2)
    expect(result.steps[0]!.toolResults[0]!.output).toEqual({ status: 'ok', output: 'orders: 2\n', value: 42 })
    // What the model received in its second prompt: the JSON tool output, no images.
    expect(result.text).toBe('the tool said {"type":"json","value":{"status":"ok","output":"orders: 2\\n","value":42}}')
    expect(model.doGenerateCalls[0]!.tools?.[0]).toMatchObject({
      type: 'function',
      name: 'execute_code',
      inputSchema: { required: ['language', 'code'] },
    })
  })

  test('code that raises comes back as status error with the exception, not as a thrown tool error', async () => {
    const { result } = await loop({ execgate: runner() }, [{ language: 'python', code: 'int("forty-two")' }])
    expect(result.steps[0]!.toolResults[0]!.output).toMatchObject({ status: 'error', error: expect.stringContaining('ValueError') })
  })

  test('a bound session keeps variables between the calls of one conversation', async () => {
    const { result } = await loop({ execgate: runner(), sessionId: `ai-sdk-${mode}` }, SESSION_CALLS)
    expect(result.steps[1]!.toolResults[0]!.output).toMatchObject({ status: 'ok', value: 42 })
  })

  test('a bound sandbox keeps files between the calls', async () => {
    const sandbox = await backends.modes.find((item) => item.name === mode)!.startSandbox()
    try {
      const { result } = await loop({ sandbox }, SANDBOX_CALLS)
      expect(result.steps[1]!.toolResults[0]!.output).toMatchObject({ status: 'ok', output: '42\n' })
    } finally {
      await sandbox.stop()
    }
  })

  test('an image the run drew reaches the model as image content in its next prompt', async () => {
    const { result, model } = await loop({ execgate: runner() }, [IMAGE_CALL])
    expect(result.steps[0]!.toolResults[0]!.output).toMatchObject({ status: 'ok', value: 'drawn', images: [{ mimeType: 'image/svg+xml' }] })
    const sent = (model.doGenerateCalls[1]!.prompt as ModelMessage[])
      .flatMap((message) => (message.role === 'tool' ? message.content : []))
      .map((part) => (part.type === 'tool-result' ? part.output : undefined))
    expect(sent).toEqual([
      {
        type: 'content',
        value: [
          { type: 'text', text: expect.stringContaining('"status":"ok"') },
          { type: 'image-data', data: SVG_BASE64, mediaType: 'image/svg+xml' },
        ],
      },
    ])
  })
})

test('images a run made reach the model as image content (toModelOutput)', async () => {
  const png = Buffer.from('89504e470d0a1a0a', 'hex').toString('base64')
  const tool = executeCodeTool({ execgate: backends.execgate })
  const output = await tool.toModelOutput!({
    toolCallId: 'c',
    input: SUM_CALL,
    output: { status: 'ok', output: '', images: [{ mimeType: 'image/png', data: png }] },
  })
  expect(output).toEqual({
    type: 'content',
    value: [
      { type: 'text', text: '{"status":"ok","output":"","images":["image 1 (image/png, 8 bytes)"]}' },
      { type: 'image-data', data: png, mediaType: 'image/png' },
    ],
  })
})
