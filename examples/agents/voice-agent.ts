/**
 * A voice agent's turn: the user asks for a computation, the handler runs it and returns a sentence for text to
 * speech. Run (after `npm run build`: the package name `execgate` resolves to dist/ through package.json's
 * `exports`): `npx ts-node examples/agents/voice-agent.ts`. With EXECGATE_BEDROCK_MODEL set (and AWS credentials),
 * Bedrock writes the code; otherwise the code an LLM would have written is given.
 */
import { createExecgate } from 'execgate'
import { BedrockConverseProvider, CodeExecutionHandler, CodeGenerator } from 'execgate/agents'

async function main(): Promise<void> {
  const execgate = await createExecgate({ overrides: { readiness: { enabled: false }, log: { level: 'warn' } } })
  const model = process.env.EXECGATE_BEDROCK_MODEL
  const llm = model ? new BedrockConverseProvider({ modelId: model, region: process.env.AWS_REGION }) : undefined
  const handler = new CodeExecutionHandler(execgate, llm ? new CodeGenerator(llm, execgate) : undefined, llm, { voiceBudgetMs: 1500 })
  try {
    const turns = [
      {
        description: "What's the total with 8% tax on a 12.50 pizza, 7.25 wings and a 3 dollar soda?",
        code: 'prices = [12.50, 7.25, 3.00]\nround(sum(prices) * 1.08, 2)',
      },
      { description: 'Split 86.40 between three people with an 18% tip.', code: 'round(86.40 * 1.18 / 3, 2)' },
    ]
    for (const turn of turns) {
      const response = await handler.handleComputationRequest({ ...turn, ...(llm ? { code: undefined } : {}), channel: 'voice' })
      process.stdout.write(`user:  ${turn.description}\nagent: ${response.text}\n`)
      // Past the voice budget the agent offers to keep going; the user says yes and hears the answer when it is ready.
      if (response.outcome === 'over_budget' && response.continuation) {
        process.stdout.write(`user:  Yes, please.\nagent: ${(await handler.continueRequest(response.continuation)).text}\n`)
      }
      process.stdout.write('\n')
    }
  } finally {
    await execgate.dispose()
  }
}

void main()
