/**
 * The library as an npm user imports it: run JavaScript and Python, then answer a voice turn with the agents'
 * handler. Run: `node examples/library/quickstart.mjs` (in this repository after `npm run build`, where the
 * package name resolves to dist/ through package.json's `exports`; in a project after `npm install execgate`).
 * test/package/pack.test.ts runs this file from the packed tarball.
 */
import { createExecgate } from 'execgate'
import { CodeExecutionHandler } from 'execgate/agents'

// Only the two embedded adapters: nothing to install beside Node, and the readiness monitor off for a one-shot script.
const execgate = await createExecgate({
  overrides: { execution: { enabled: ['quickjs', 'monty'] }, readiness: { enabled: false }, log: { level: 'warn' } },
})
try {
  const order = await execgate.execute({
    language: 'javascript',
    code: 'const prices = [12.5, 7.25, 3]\nMath.round(prices.reduce((a, b) => a + b, 0) * 1.08 * 100) / 100',
  })
  console.log(`javascript: ${order.status} ${JSON.stringify(order.value)} (${order.adapter})`)

  const split = await execgate.execute({ language: 'python', code: 'round(86.40 * 1.18 / 3, 2)' })
  console.log(`python: ${split.status} ${JSON.stringify(split.value)} (${split.adapter})`)

  // Without an LLM the handler runs the code it is given; with one (see examples/agents) it writes the code itself.
  const handler = new CodeExecutionHandler(execgate, undefined, undefined, { voiceBudgetMs: 1500 })
  const turn = await handler.handleComputationRequest({
    description: 'Split 86.40 between three people with an 18% tip.',
    code: 'round(86.40 * 1.18 / 3, 2)',
    channel: 'voice',
  })
  console.log(`voice: ${turn.outcome} ${turn.text}`)
} finally {
  await execgate.dispose()
}
