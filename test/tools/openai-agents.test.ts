import { Agent, Runner, Usage, setTracingDisabled, type Model, type ModelRequest, type ModelResponse } from '@openai/agents'
import { executeCodeTool } from '../../src/tools/openai-agents'
import type { CodeToolOptions } from '../../src/tools/code-tool'
import { IMAGE_CALL, SANDBOX_CALLS, SESSION_CALLS, SUM_CALL, SVG_BASE64, startToolBackends, type ToolBackends } from './tool-harness'

/**
 * execgate/openai-agents in the OpenAI Agents SDK's own loop: an Agent run by a Runner whose model is a scripted
 * implementation of the SDK's Model interface. It asks for the given calls one after another (function_call items),
 * then answers from the last function_call_result it was sent, as a real model would. Tracing is off: nothing
 * leaves the machine.
 */

setTracingDisabled(true)
let backends: ToolBackends
beforeAll(async () => {
  backends = await startToolBackends()
}, 60_000)
afterAll(() => backends?.stop())

type Item = { type?: string; output?: unknown }

class ScriptedModel implements Model {
  readonly requests: ModelRequest[] = []
  constructor(private readonly calls: readonly { language: string; code: string }[]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.requests.push(request)
    const results = (Array.isArray(request.input) ? (request.input as Item[]) : []).filter((item) => item.type === 'function_call_result')
    if (results.length < this.calls.length) {
      return {
        usage: new Usage(),
        output: [
          {
            type: 'function_call',
            callId: `call-${results.length + 1}`,
            name: 'execute_code',
            arguments: JSON.stringify(this.calls[results.length]),
            status: 'completed',
          },
        ],
      }
    }
    const last = results.at(-1)!.output as { type: string; text: string }
    return {
      usage: new Usage(),
      output: [
        { type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: `the tool said ${last.text}` }] },
      ],
    }
  }

  // eslint-disable-next-line require-yield -- the Runner's non-streamed run never asks for a stream
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not streamed in these tests')
  }
}

async function loop(options: CodeToolOptions, calls: readonly { language: string; code: string }[]) {
  const model = new ScriptedModel(calls)
  const agent = new Agent({ name: 'analyst', instructions: 'compute exactly', model, tools: [executeCodeTool(options)] })
  const result = await new Runner({ tracingDisabled: true }).run(agent, 'compute it', { maxTurns: calls.length + 2 })
  const outputs = result.newItems
    .filter((item) => item.type === 'tool_call_output_item')
    .map((item) => JSON.parse((item as unknown as { output: string }).output) as Record<string, unknown>)
  return { result, model, outputs }
}

describe.each(['in-process', 'remote'] as const)('execgate/openai-agents (%s)', (mode) => {
  const runner = () => backends.modes.find((item) => item.name === mode)!.runner()

  test("the agent's call runs, and the model reads status, output and value", async () => {
    const { result, model, outputs } = await loop({ execgate: runner() }, [SUM_CALL])
    expect(outputs).toEqual([{ status: 'ok', output: 'orders: 2\n', value: 42 }])
    expect(result.finalOutput).toBe('the tool said {"status":"ok","output":"orders: 2\\n","value":42}')
    expect(model.requests[0]!.tools[0]).toMatchObject({
      type: 'function',
      name: 'execute_code',
      strict: true,
      parameters: { required: ['language', 'code'] },
    })
  })

  test('code that raises comes back as status error with the exception', async () => {
    const { outputs } = await loop({ execgate: runner() }, [{ language: 'python', code: 'int("forty-two")' }])
    expect(outputs[0]).toMatchObject({ status: 'error', error: expect.stringContaining('ValueError') })
  })

  test('a bound session keeps variables between calls', async () => {
    const { outputs } = await loop({ execgate: runner(), sessionId: `openai-agents-${mode}` }, SESSION_CALLS)
    expect(outputs[1]).toMatchObject({ status: 'ok', value: 42 })
  })

  test('a bound sandbox keeps files between calls', async () => {
    const sandbox = await backends.modes.find((item) => item.name === mode)!.startSandbox()
    try {
      const { outputs } = await loop({ sandbox }, SANDBOX_CALLS)
      expect(outputs[1]).toMatchObject({ status: 'ok', output: '42\n' })
    } finally {
      await sandbox.stop()
    }
  })

  test('an image the run drew reaches the model as an image item of the function_call_result', async () => {
    const model = new ScriptedModel([IMAGE_CALL])
    const agent = new Agent({ name: 'artist', instructions: 'draw', model, tools: [executeCodeTool({ execgate: runner() })] })
    await new Runner({ tracingDisabled: true }).run(agent, 'draw it', { maxTurns: 3 })
    const sent = (model.requests[1]!.input as Item[]).filter((item) => item.type === 'function_call_result').map((item) => item.output)
    expect(sent).toEqual([
      [
        { type: 'input_text', text: expect.stringContaining('"status":"ok"') },
        { type: 'input_image', image: `data:image/svg+xml;base64,${SVG_BASE64}` },
      ],
    ])
  })
})
