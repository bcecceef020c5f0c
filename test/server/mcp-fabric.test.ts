import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, GLOBEX, httpCaller } from '../servers/http-caller'

/**
 * MCP `submit_task` and `submit_plan` (with `get_task` and `get_plan`) over streamable HTTP, behind two tenants' keys
 * and a tight profile: a submit that loosens the profile is refused with the code and message the HTTP API answers
 * (EXECGATE_SUBMIT_REFUSED, naming the limit) and nothing is stored; a valid one runs to its value; another tenant
 * cannot read it. Real server on loopback, real quickjs, real SQLite task and plan stores.
 */

const WALL_MS = 3000

let execgate: Execgate
let server: RunningServer
let dataDir: string
const clients: Client[] = []
beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-mcp-fabric-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir },
      security: { profiles: { tight: { wallTimeMs: WALL_MS, memoryMb: 64 } } },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`], tenants: { acme: { profile: 'tight' }, globex: { profile: 'tight' } } },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 60_000)
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()))
  await server.shutdown()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

const call = httpCaller(() => server.url)
async function mcpAs(key: string): Promise<Client> {
  const client = new Client({ name: 'mcp-fabric-test', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
  )
  clients.push(client)
  return client
}
const textOf = (answer: unknown) => (answer as { content: Array<{ text: string }> }).content[0]!.text

describe('submit_task over MCP', () => {
  test('a timeoutMs above the profile is refused with the HTTP code and message; nothing is stored', async () => {
    const acme = await mcpAs(ACME)
    const args = { language: 'javascript', code: '1', timeoutMs: WALL_MS + 1, idempotencyKey: 'mcp-loosened' }
    const refused = await acme.callTool({ name: 'submit_task', arguments: args })
    const overHttp = await call('/v1/tasks', {
      key: ACME,
      body: { request: { language: 'javascript', code: '1' }, timeoutMs: WALL_MS + 1, idempotencyKey: 'mcp-loosened' },
    })
    expect(overHttp.json.error).toMatchObject({ code: 'EXECGATE_SUBMIT_REFUSED' })
    expect(refused).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'EXECGATE_SUBMIT_REFUSED', message: overHttp.json.error.message } },
    })
    expect(textOf(refused)).toBe(`${overHttp.json.error.message} (EXECGATE_SUBMIT_REFUSED)`)
    expect(textOf(refused)).toContain(
      `the task was not submitted: the request may only tighten the policy: wallTimeMs ${WALL_MS + 1} is above the allowed ${WALL_MS}`,
    )
    expect((await call('/v1/tasks?limit=500', { key: ACME })).json.tasks).toEqual([])
  }, 30_000)

  test('a valid task runs to its value; another tenant cannot read it', async () => {
    const acme = await mcpAs(ACME)
    const submitted = await acme.callTool({ name: 'submit_task', arguments: { language: 'javascript', code: '6 * 7', timeoutMs: WALL_MS } })
    expect(submitted.isError).toBeFalsy()
    const id = (submitted.structuredContent as { id: string }).id
    expect(textOf(submitted)).toMatch(new RegExp(`^task ${id} is `))
    const done = await acme.callTool({ name: 'get_task', arguments: { id, waitMs: 30_000 } })
    expect(done).toMatchObject({ isError: false, structuredContent: { id, tenant: 'acme', state: 'COMPLETED', result: { value: 42 } } })
    expect(textOf(done)).toBe(`task ${id} is COMPLETED value: 42`)

    const globex = await mcpAs(GLOBEX)
    for (const waitMs of [undefined, 1000]) {
      const hidden = await globex.callTool({ name: 'get_task', arguments: { id, ...(waitMs ? { waitMs } : {}) } })
      expect(hidden).toEqual({ content: [{ type: 'text', text: `no task "${id}"` }], isError: true })
    }
    expect((await call(`/v1/tasks/${id}`, { key: GLOBEX })).status).toBe(404)
  }, 60_000)
})

describe('submit_plan over MCP', () => {
  const steps = (limits?: object) => [
    { id: 'six', language: 'javascript', code: '6' },
    { id: 'times', language: 'javascript', code: '7 * 6', dependsOn: ['six'], ...(limits ? { limits } : {}) },
  ]

  test.each([
    ['timeoutMs', { timeoutMs: WALL_MS + 1 }, `wallTimeMs ${WALL_MS + 1} is above the allowed ${WALL_MS}`],
    ['memoryMb', { memoryMb: 65 }, 'memoryMb 65 is above the allowed 64'],
  ])(
    'a step whose %s loosens the profile is refused with the HTTP code and message; nothing is stored',
    async (_label, limits, limit) => {
      const acme = await mcpAs(ACME)
      const refused = await acme.callTool({ name: 'submit_plan', arguments: { steps: steps(limits) } })
      const overHttp = await call('/v1/plans', { key: ACME, body: { steps: steps(limits) } })
      expect(overHttp.json.error).toMatchObject({ code: 'EXECGATE_SUBMIT_REFUSED' })
      expect(refused).toMatchObject({
        isError: true,
        structuredContent: { error: { code: 'EXECGATE_SUBMIT_REFUSED', message: overHttp.json.error.message } },
      })
      expect(textOf(refused)).toBe(`${overHttp.json.error.message} (EXECGATE_SUBMIT_REFUSED)`)
      expect(textOf(refused)).toContain(`the plan was not submitted: step "times": the request may only tighten the policy: ${limit}`)
      expect((await call('/v1/plans?limit=500', { key: ACME })).json.plans).toEqual([])
    },
    30_000,
  )

  test('a valid plan runs to its values; another tenant cannot read it', async () => {
    const acme = await mcpAs(ACME)
    const submitted = await acme.callTool({ name: 'submit_plan', arguments: { steps: steps({ timeoutMs: WALL_MS, memoryMb: 64 }) } })
    expect(submitted.isError).toBeFalsy()
    const id = (submitted.structuredContent as { id: string }).id
    const done = await acme.callTool({ name: 'get_plan', arguments: { id, waitMs: 30_000 } })
    expect(done.structuredContent).toMatchObject({
      id,
      state: 'COMPLETED',
      steps: [
        { id: 'six', result: { value: 6 } },
        { id: 'times', result: { value: 42 } },
      ],
    })
    expect(textOf(done)).toContain('- times: COMPLETED value: 42')

    const globex = await mcpAs(GLOBEX)
    const hidden = await globex.callTool({ name: 'get_plan', arguments: { id } })
    expect(hidden).toMatchObject({ isError: true, content: [{ text: `no plan "${id}"` }] })
    expect((await call(`/v1/plans/${id}`, { key: GLOBEX })).status).toBe(404)
  }, 60_000)
})
