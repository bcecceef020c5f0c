import { RunContext } from '@openai/agents'
import type { ToolMessage } from '@langchain/core/messages'
import type { ExecutionResult } from '../../src/core'
import { executeCodeTool as aiSdkTool } from '../../src/tools/ai-sdk'
import { answerText, toolAnswer, type CodeRunner } from '../../src/tools/code-tool'
import { executeCodeTool as langchainTool } from '../../src/tools/langchain'
import { executeCodeTool as openAiAgentsTool } from '../../src/tools/openai-agents'

/**
 * The answer's mapping, unit-tested: images a run made (`result.outputs`, issue 25's shape) reach each framework as
 * the image content it carries, through the framework's own invocation of the tool. The runner is a stand-in that
 * answers a fixed result: what is under test is the mapping, not the run (the loops in the other files run real code).
 */

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64')
const TABLE = { kind: 'table', columns: ['a'], rows: [[1]], rowCount: 1, bytes: 10 }
const result = {
  status: 'ok',
  adapter: 'process',
  traceId: 't',
  durationMs: 1,
  stdout: 'plotted\n',
  stderr: '',
  truncated: false,
  stdoutBytes: 8,
  stderrBytes: 0,
  usage: {},
  value: 3,
  outputs: [{ kind: 'image', mimeType: 'image/png', data: PNG, bytes: 16 }, TABLE],
} as ExecutionResult
const runner: CodeRunner = { execute: async () => result }
const input = { language: 'python' as const, code: 'plot()' }

test('toolAnswer: status, output, value; images split out, tables kept as outputs; stderr under a marker', () => {
  expect(toolAnswer(result)).toEqual({
    status: 'ok',
    output: 'plotted\n',
    value: 3,
    outputs: [TABLE],
    images: [{ mimeType: 'image/png', data: PNG }],
  } as never)
  expect(JSON.parse(answerText(toolAnswer(result))).images).toEqual(['image 1 (image/png, 16 bytes)'])
  expect(
    toolAnswer({
      ...result,
      outputs: [],
      stdout: 'a',
      stderr: 'warn\n',
      status: 'error',
      error: { type: 'ValueError', message: 'bad', line: 2 },
      message: 'the code raised',
    } as ExecutionResult),
  ).toEqual({
    status: 'error',
    output: 'a\n[stderr]\nwarn\n',
    value: 3,
    error: 'ValueError: bad (line 2)',
    message: 'the code raised',
  })
})

test('AI SDK: text then image-data parts', async () => {
  const tool = aiSdkTool({ execgate: runner })
  const output = await tool.execute!(input, { toolCallId: 'c', messages: [] })
  const model = await tool.toModelOutput!({ toolCallId: 'c', input, output: output as never })
  expect(model).toMatchObject({ type: 'content', value: [{ type: 'text' }, { type: 'image-data', data: PNG, mediaType: 'image/png' }] })
})

test('LangChain: the ToolMessage content has a text block and an image_url data URL; the artifact is the result', async () => {
  const message = (await langchainTool({ execgate: runner }).invoke({
    id: 'call-1',
    name: 'execute_code',
    args: input,
    type: 'tool_call',
  })) as ToolMessage
  expect(message.content).toEqual([
    { type: 'text', text: answerText(toolAnswer(result)) },
    { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
  ])
  expect(message.artifact).toBe(result)
})

test('OpenAI Agents SDK: the function tool answers text and an image item', async () => {
  const output = await openAiAgentsTool({ execgate: runner }).invoke(new RunContext(), JSON.stringify(input))
  expect(output).toEqual([
    { type: 'text', text: answerText(toolAnswer(result)) },
    { type: 'image', image: { data: PNG, mediaType: 'image/png' } },
  ])
})
