/**
 * A chat agent's turn: the answer is markdown with the result and, on request, the code. Run (after `npm run build`:
 * the package name `execgate` resolves to dist/ through package.json's `exports`):
 * `npx ts-node examples/agents/chat-agent.ts`. With EXECGATE_BEDROCK_MODEL set (and AWS credentials), Bedrock
 * writes the code; otherwise the code an LLM would have written is given.
 */
import { createExecgate } from 'execgate'
import { BedrockConverseProvider, CodeExecutionHandler, CodeGenerator } from 'execgate/agents'

async function main(): Promise<void> {
  const execgate = await createExecgate({ overrides: { readiness: { enabled: false }, log: { level: 'warn' } } })
  const model = process.env.EXECGATE_BEDROCK_MODEL
  const llm = model ? new BedrockConverseProvider({ modelId: model, region: process.env.AWS_REGION }) : undefined
  const handler = new CodeExecutionHandler(execgate, llm ? new CodeGenerator(llm, execgate) : undefined, llm)
  try {
    const response = await handler.handleComputationRequest({
      description: 'Summarise last month: total, average and the best day of these daily sales.',
      code: llm
        ? undefined
        : "const sales = { '2026-10-01': 420, '2026-10-02': 385, '2026-10-03': 512, '2026-10-04': " +
          '298 }\nconst days = Object.entries(sales)\nconst total = days.reduce((sum, [, v]) => sum ' +
          '+ v, 0)\nconst [bestDay] = days.reduce((best, day) => (day[1] > best[1] ? day : ' +
          'best));\n({ total, average: total / days.length, bestDay })',
      language: 'javascript',
      channel: 'chat',
      showCode: true,
    })
    process.stdout.write(`${response.text}\n`)
  } finally {
    await execgate.dispose()
  }
}

void main()
