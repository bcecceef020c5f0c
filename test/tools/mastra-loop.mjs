// A Mastra Agent's tool-call loop in a plain Node process (Mastra 0.24's CommonJS build requires ESM-only packages,
// which Node 20.19+ loads and Jest's module system does not). test/tools/mastra.test.ts runs it; its one argument is
// a JSON scenario { mode: 'in-process' | 'remote', url, apiKey, bind: 'none' | 'session' | 'sandbox', calls }, and it
// prints { text, outputs, toolNames } as one JSON line.
import { Agent } from '@mastra/core/agent'
import { createExecgate } from 'execgate'
import { ExecgateClient } from 'execgate/client'
import { executeCodeTool } from 'execgate/mastra'

const scenario = JSON.parse(process.argv[2])
const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 }

/**
 * An AI SDK LanguageModelV2 (what Mastra 0.24 drives) that streams a tool call per scripted call, then answers from the
 * last tool result. */
function scriptedModel(calls) {
  const toolNames = []
  const next = (options) => {
    toolNames.push(...(options.tools ?? []).map((tool) => tool.name))
    const results = options.prompt
      .flatMap((message) => (message.role === 'tool' ? message.content : []))
      .filter((part) => part.type === 'tool-result')
    if (results.length < calls.length)
      return { kind: 'call', id: `call-${results.length + 1}`, input: JSON.stringify(calls[results.length]) }
    return { kind: 'text', text: `the tool said ${JSON.stringify(results.at(-1).output)}` }
  }
  return {
    specificationVersion: 'v2',
    provider: 'scripted',
    modelId: 'scripted-v2',
    supportedUrls: {},
    toolNames,
    async doGenerate(options) {
      const step = next(options)
      const content =
        step.kind === 'call'
          ? [{ type: 'tool-call', toolCallId: step.id, toolName: 'execute_code', input: step.input }]
          : [{ type: 'text', text: step.text }]
      return { content, finishReason: step.kind === 'call' ? 'tool-calls' : 'stop', usage, warnings: [] }
    },
    async doStream(options) {
      const step = next(options)
      const parts =
        step.kind === 'call'
          ? [
              { type: 'tool-call', toolCallId: step.id, toolName: 'execute_code', input: step.input },
              { type: 'finish', finishReason: 'tool-calls', usage },
            ]
          : [
              { type: 'text-start', id: 't' },
              { type: 'text-delta', id: 't', delta: step.text },
              { type: 'text-end', id: 't' },
              { type: 'finish', finishReason: 'stop', usage },
            ]
      return {
        stream: new ReadableStream({
          start(controller) {
            for (const part of [{ type: 'stream-start', warnings: [] }, ...parts]) controller.enqueue(part)
            controller.close()
          },
        }),
      }
    },
  }
}

const execgate =
  scenario.mode === 'remote'
    ? new ExecgateClient({ url: scenario.url, apiKey: scenario.apiKey })
    : await createExecgate({
        overrides: { execution: { enabled: ['quickjs', 'monty', 'shell'] }, readiness: { enabled: false }, log: { level: 'silent' } },
      })
const sandbox = scenario.bind === 'sandbox' ? await execgate.sandboxes.start({ adapter: 'shell' }) : undefined
try {
  const model = scriptedModel(scenario.calls)
  const options = sandbox
    ? { sandbox }
    : { execgate, ...(scenario.bind === 'session' ? { sessionId: `mastra-${scenario.mode}-${process.pid}` } : {}) }
  const agent = new Agent({ name: 'analyst', instructions: 'compute exactly', model, tools: { execute_code: executeCodeTool(options) } })
  const result = await agent.generate('compute it', { maxSteps: scenario.calls.length + 2 })
  const outputs = result.toolResults.map((item) => item.payload?.result ?? item.result)
  process.stdout.write(JSON.stringify({ text: result.text, outputs, toolNames: [...new Set(model.toolNames)] }) + '\n')
} finally {
  await sandbox?.stop()
  if (scenario.mode !== 'remote') await execgate.dispose()
}
