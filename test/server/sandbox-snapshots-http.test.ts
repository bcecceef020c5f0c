import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createExecgate, type Execgate } from '../../src'
import { ExecgateClient } from '../../src/client'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, GLOBEX, httpCaller } from '../servers/http-caller'

/**
 * Snapshots on every surface over real HTTP on loopback (native shell; SQLite records and blob folder in a temp
 * dataDir): POST /v1/sandboxes/:id/snapshots and POST /v1/sandboxes { from }, the client's `snapshot()`, MCP's
 * sandbox_snapshot and sandbox_start { from }, and the built CLI's `sandbox snapshot` and `sandbox start --from`.
 * Another tenant's snapshot answers 404 exactly like one nobody took.
 */

const run = promisify(execFile)
const CLI = path.join(__dirname, '../../bin/execgate.js')

let execgate: Execgate
let server: RunningServer
let dataDir: string

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-snapshots-http-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell'] },
      fabric: { dataDir },
      readiness: { enabled: false },
      log: { level: 'silent' },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`] },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 60_000)

afterAll(async () => {
  await server.shutdown()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

const call = httpCaller(() => server.url)

test('HTTP: snapshot, restore by from, and tenants', async () => {
  const started = await call('/v1/sandboxes', { key: ACME, body: { adapter: 'shell', files: [{ path: 'a/b.txt', content: 'bee\n' }] } })
  const id = started.json.id as string
  const snapshot = await call(`/v1/sandboxes/${id}/snapshots`, { key: ACME, method: 'POST' })
  expect(snapshot.status).toBe(201)
  expect(snapshot.json).toMatchObject({ sandboxId: id, adapter: 'shell', files: 1, reason: 'requested' })
  expect(snapshot.headers.get('location')).toBe(`/v1/artifacts/${snapshot.json.id}`)
  expect((await call(`/v1/sandboxes/${id}`, { key: ACME })).json.lastSnapshot).toEqual(snapshot.json)
  // The archive is served as the tenant's artifact, a tar.
  const artifact = await call(`/v1/artifacts/${snapshot.json.id}`, { key: ACME })
  expect(artifact.status).toBe(200)
  expect(artifact.headers.get('content-type')).toContain('application/x-tar')

  const restored = await call('/v1/sandboxes', { key: ACME, body: { adapter: 'shell', from: snapshot.json.id } })
  expect(restored.status).toBe(201)
  expect((await call(`/v1/sandboxes/${restored.json.id}/files/a/b.txt`, { key: ACME })).text).toBe('bee\n')

  // globex: a foreign snapshot is a 404 exactly like an unknown one, and starts nothing; its id is no route either.
  const foreign = await call('/v1/sandboxes', { key: GLOBEX, body: { adapter: 'shell', from: snapshot.json.id } })
  const unknown = await call('/v1/sandboxes', { key: GLOBEX, body: { adapter: 'shell', from: 'e'.repeat(64) } })
  expect(foreign.status).toBe(404)
  expect(foreign.json.error.message.replace(snapshot.json.id, '<id>')).toBe(unknown.json.error.message.replace('e'.repeat(64), '<id>'))
  expect((await call(`/v1/sandboxes/${id}/snapshots`, { key: GLOBEX, method: 'POST' })).status).toBe(404)
  expect((await call('/v1/sandboxes', { key: GLOBEX })).json.sandboxes).toEqual([])
  expect((await call('/v1/sandboxes', { key: ACME, body: { from: 'nope' } })).status).toBe(400)
  for (const sandbox of [id, restored.json.id]) await call(`/v1/sandboxes/${sandbox}`, { key: ACME, method: 'DELETE' })
}, 60_000)

test('the client, MCP and the CLI snapshot and restore', async () => {
  const client = new ExecgateClient({ url: server.url, apiKey: ACME })
  const sandbox = await client.sandboxes.start({ adapter: 'shell' })
  await sandbox.writeFile('notes.md', '# kept\n')
  const snapshot = await sandbox.snapshot()
  const fork = await client.sandboxes.start({ adapter: 'shell', from: snapshot.id })
  expect(await fork.readText('notes.md')).toBe('# kept\n')

  const mcp = new Client({ name: 'execgate-test', version: '1.0.0' })
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${ACME}` } } }),
  )
  try {
    const taken = await mcp.callTool({ name: 'sandbox_snapshot', arguments: { sandboxId: fork.id } })
    expect(taken.isError).toBeFalsy()
    const takenId = (taken.structuredContent as { id: string }).id
    expect(takenId).toBe(snapshot.id)
    const fromMcp = await mcp.callTool({ name: 'sandbox_start', arguments: { adapter: 'shell', from: takenId } })
    const mcpSandbox = (fromMcp.structuredContent as { id: string }).id
    const read = await mcp.callTool({ name: 'sandbox_exec', arguments: { sandboxId: mcpSandbox, command: 'cat notes.md' } })
    expect((read.structuredContent as { stdout: string }).stdout).toBe('# kept\n')
    await mcp.callTool({ name: 'sandbox_stop', arguments: { sandboxId: mcpSandbox } })
  } finally {
    await mcp.close()
  }

  const env = { ...process.env, EXECGATE_URL: server.url, EXECGATE_API_KEY: ACME }
  const fromCli = (await run('node', [CLI, 'sandbox', 'snapshot', sandbox.id], { env })).stdout.trim()
  expect(fromCli).toBe(snapshot.id)
  const cliSandbox = (await run('node', [CLI, 'sandbox', 'start', '--adapter', 'shell', '--from', fromCli], { env })).stdout.trim()
  expect((await run('node', [CLI, 'sandbox', 'exec', cliSandbox, 'cat notes.md'], { env })).stdout).toBe('# kept\n')
  for (const id of [sandbox.id, fork.id, cliSandbox]) await client.sandboxes.stop(id)
}, 90_000)
