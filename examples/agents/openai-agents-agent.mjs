// An OpenAI Agents SDK agent with execgate's code tool, bound to a sandbox (its calls share files). With
// OPENAI_API_KEY set it runs on OpenAI's default model; otherwise a scripted Model plays the LLM's part.
import { Agent, Runner, Usage, setTracingDisabled } from '@openai/agents'
import { executeCodeTool } from 'execgate/openai-agents'
import { QUESTION, connect } from './connect.mjs'

/** The sandbox here is the native shell (bash and coreutils, no python): the scripted model computes with awk. */
const SANDBOX_CALL = { language: 'bash', code: `echo "12.50 30.00 7.25" | awk '{ printf "%.2f\\n", ($1 + $2 + $3) * 1.08 }'` }

const scripted = {
  async getResponse({ input }) {
    const result = (Array.isArray(input) ? input : []).find((item) => item.type === 'function_call_result')
    if (!result)
      return {
        usage: new Usage(),
        output: [
          { type: 'function_call', callId: 'call-1', name: 'execute_code', arguments: JSON.stringify(SANDBOX_CALL), status: 'completed' },
        ],
      }
    const answer = JSON.parse(result.output.text)
    return {
      usage: new Usage(),
      output: [
        {
          type: 'message',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: `The total with tax is ${answer.output.trim()}.` }],
        },
      ],
    }
  },
  async *getStreamedResponse() {
    throw new Error('not streamed')
  },
}

if (!process.env.OPENAI_API_KEY) setTracingDisabled(true)
const { execgate, where, close } = await connect()
const sandbox = await execgate.sandboxes.start({ adapter: 'shell' })
try {
  const agent = new Agent({
    name: 'bookkeeper',
    instructions: 'Compute with the execute_code tool (a bash sandbox), never by estimating.',
    tools: [executeCodeTool({ sandbox, languages: ['bash'] })],
    ...(process.env.OPENAI_API_KEY ? {} : { model: scripted }),
  })
  const result = await new Runner().run(agent, QUESTION, { maxTurns: 5 })
  console.log(
    JSON.stringify({
      framework: 'openai-agents',
      where,
      toolCalls: result.newItems.filter((item) => item.type === 'tool_call_item').length,
      answer: result.finalOutput,
    }),
  )
} finally {
  await sandbox.stop()
  await close()
}
