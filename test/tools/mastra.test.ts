import { spawn } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { SANDBOX_CALLS, SESSION_CALLS, SUM_CALL, KEY, startToolBackends, type ToolBackends } from './tool-harness'

/**
 * execgate/mastra in a Mastra Agent's own loop (`agent.generate` with maxSteps; a scripted AI SDK LanguageModelV2
 * streams the tool calls and answers from the last tool result in its prompt). The loop runs in a plain Node process
 * (mastra-loop.mjs, importing execgate/mastra through the package's exports from dist/): Mastra 0.24's CommonJS build
 * requires ESM-only packages, which Node 20.19+ loads and Jest's module registry cannot.
 */

let backends: ToolBackends
let url: string
beforeAll(async () => {
  if (!fs.existsSync(path.join(__dirname, '../../dist/src/tools/mastra.js')))
    throw new Error('dist/ is not built: run `npm run build` (npm test builds first)')
  backends = await startToolBackends()
  url = backends.url
}, 60_000)
afterAll(() => backends?.stop())

function loop(
  mode: 'in-process' | 'remote',
  bind: 'none' | 'session' | 'sandbox',
  calls: readonly object[],
): Promise<{ text: string; outputs: string[]; toolNames: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [path.join(__dirname, 'mastra-loop.mjs'), JSON.stringify({ mode, url, apiKey: KEY, bind, calls })],
      { cwd: path.join(__dirname, '../..'), stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()))
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()))
    child.once('exit', (code) => {
      const line = stdout.trim().split('\n').at(-1) ?? ''
      if (code === 0 && line.startsWith('{')) resolve(JSON.parse(line))
      else reject(new Error(`mastra-loop exited ${code}: ${stderr || stdout}`))
    })
  })
}

describe.each(['in-process', 'remote'] as const)('execgate/mastra (%s)', (mode) => {
  test("the agent's call runs, and the model reads status, output and value", async () => {
    const { text, outputs, toolNames } = await loop(mode, 'none', [SUM_CALL])
    expect(toolNames).toEqual(['execute_code'])
    expect(outputs.map((output) => JSON.parse(output))).toEqual([{ status: 'ok', output: 'orders: 2\n', value: 42 }])
    expect(JSON.parse(text.replace('the tool said ', ''))).toEqual({
      type: 'text',
      value: '{"status":"ok","output":"orders: 2\\n","value":42}',
    })
  }, 60_000)

  test('code that raises comes back as status error with the exception', async () => {
    const { outputs } = await loop(mode, 'none', [{ language: 'python', code: 'int("forty-two")' }])
    expect(JSON.parse(outputs[0]!)).toMatchObject({ status: 'error', error: expect.stringContaining('ValueError') })
  }, 60_000)

  test('a bound session keeps variables between calls', async () => {
    const { outputs } = await loop(mode, 'session', SESSION_CALLS)
    expect(JSON.parse(outputs[1]!)).toMatchObject({ status: 'ok', value: 42 })
  }, 60_000)

  test('a bound sandbox keeps files between calls', async () => {
    const { outputs } = await loop(mode, 'sandbox', SANDBOX_CALLS)
    expect(JSON.parse(outputs[1]!)).toMatchObject({ status: 'ok', output: '42\n' })
  }, 60_000)
})
