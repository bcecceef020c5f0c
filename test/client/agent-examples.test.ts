import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { ACME_KEY, startServeProcess, type ServeProcess } from './serve-harness'

/**
 * examples/agents/: each framework's agent runs as a user runs it (`node examples/agents/<name>.mjs`, importing
 * execgate/* through the package's exports from dist/), with its scripted model (provider keys are removed from the
 * environment), in-process and against a real `execgate serve`. Each must call the tool once and answer from its
 * result: (12.50 + 30.00 + 7.25) × 1.08 = 53.73, computed by the sandbox, not by the script.
 */

const run = promisify(execFile)
const ROOT = path.join(__dirname, '../..')
const EXAMPLES = ['ai-sdk-agent', 'langchain-agent', 'openai-agents-agent', 'mastra-agent']
const KEYS = ['OPENAI_API_KEY', 'AI_GATEWAY_API_KEY', 'ANTHROPIC_API_KEY', 'EXECGATE_URL', 'EXECGATE_API_KEY']

let server: ServeProcess
beforeAll(async () => {
  server = await startServeProcess()
}, 90_000)
afterAll(() => server?.stop(), 30_000)

function environment(remote: boolean): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !KEYS.includes(key)))
  return remote ? { ...env, EXECGATE_URL: server.url, EXECGATE_API_KEY: ACME_KEY } : env
}

describe.each([false, true])('examples/agents (remote: %s)', (remote) => {
  test.each(EXAMPLES)(
    '%s calls execute_code and answers from its result',
    async (example) => {
      const { stdout } = await run(process.execPath, [path.join('examples', 'agents', `${example}.mjs`)], {
        cwd: ROOT,
        env: environment(remote),
        timeout: 90_000,
      })
      const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
        framework: string
        where: string
        toolCalls: number
        answer: string
      }
      expect(report).toEqual({
        framework: example.replace(/-agent$/, ''),
        where: remote ? 'remote' : 'in-process',
        toolCalls: 1,
        answer: 'The total with tax is 53.73.',
      })
    },
    120_000,
  )
})
