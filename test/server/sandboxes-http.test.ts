import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'
import { foldersUnder, until } from '../fabric/sandboxes/resources'
import { ACME, GLOBEX, httpCaller } from '../servers/http-caller'

/** The sandbox routes and MCP tools over real HTTP on loopback, on the native shell and bubblewrap, with two tenants. */

let execgate: Execgate
let server: RunningServer
let root: string

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-sandboxes-http-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell', 'process'] },
      adapters: { process: { persistentDir: root } },
      readiness: { enabled: false },
      log: { level: 'silent' },
      sandboxes: { maxPerTenant: 3 },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`] },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 60_000)

afterAll(async () => {
  await server.shutdown()
  fs.rmSync(root, { recursive: true, force: true })
})

const call = httpCaller(() => server.url)

test('start, exec (state kept, cd not), inspect, list and stop a sandbox', async () => {
  const created = await call('/v1/sandboxes', {
    key: ACME,
    body: { adapter: 'process', idleTimeoutMs: 60_000, files: [{ path: 'data.csv', content: 'a,1\nb,2\n' }] },
  })
  expect(created.status).toBe(201)
  const id = created.json.id as string
  expect(created.headers.get('location')).toBe(`/v1/sandboxes/${id}`)
  expect(created.json).toMatchObject({
    tenant: 'acme',
    adapter: 'process',
    idleTimeoutMs: 60_000,
    execs: 0,
    languages: ['bash', 'python', 'javascript'],
  })
  const first = await call(`/v1/sandboxes/${id}/exec`, { key: ACME, body: { command: 'cut -d, -f2 data.csv > col.txt && cd /tmp && pwd' } })
  expect(first.json).toMatchObject({ status: 'ok', stdout: '/tmp\n', adapter: 'process' })
  const second = await call(`/v1/sandboxes/${id}/exec`, {
    key: ACME,
    body: { language: 'python', code: "sum(int(x) for x in open('col.txt').read().split())" },
  })
  expect(second.json).toMatchObject({ status: 'ok', value: 3 })
  expect((await call(`/v1/sandboxes/${id}`, { key: ACME })).json).toMatchObject({ id, execs: 2 })
  expect((await call('/v1/sandboxes', { key: ACME })).json.sandboxes.map((item: { id: string }) => item.id)).toContain(id)
  expect((await call(`/v1/sandboxes/${id}`, { key: ACME, method: 'DELETE' })).status).toBe(204)
  expect((await call(`/v1/sandboxes/${id}`, { key: ACME })).status).toBe(404)
  expect((await call(`/v1/sandboxes/${id}/exec`, { key: ACME, body: { command: 'true' } })).status).toBe(404)
  expect(foldersUnder(root)).not.toContain(id)
  // The OpenAPI document has the routes, with the bodies the server validates.
  const document = (await call('/docs/json')).json
  expect(Object.keys(document.paths)).toEqual(
    expect.arrayContaining([
      '/v1/sandboxes',
      '/v1/sandboxes/{id}',
      '/v1/sandboxes/{id}/exec',
      '/v1/sandboxes/{id}/files',
      '/v1/sandboxes/{id}/files/{path}',
    ]),
  )
  expect(document.paths['/v1/sandboxes/{id}/exec'].post.requestBody.content['application/json'].schema.properties).toHaveProperty('command')
})

test('exec streams as server-sent events: stdout and stderr as produced, the result last', async () => {
  const id = (await call('/v1/sandboxes', { key: ACME, body: { adapter: 'process' } })).json.id
  const streamed = await call(`/v1/sandboxes/${id}/exec`, {
    key: ACME,
    body: { command: 'echo one; sleep 0.2; echo two >&2; exit 3' },
    headers: { accept: 'text/event-stream' },
  })
  expect(streamed.headers.get('content-type')).toBe('text/event-stream')
  const events = streamed.text
    .trim()
    .split('\n\n')
    .map((block) => ({ event: /^event: (.*)$/m.exec(block)![1], data: JSON.parse(/^data: (.*)$/m.exec(block)![1]!) }))
  expect(events.map((item) => item.event)).toEqual(['stdout', 'stderr', 'result'])
  expect(events[0]!.data).toEqual({ chunk: 'one\n' })
  expect(events[2]!.data).toMatchObject({
    status: 'error',
    stdout: 'one\n',
    stderr: 'two\n',
    error: { message: expect.stringContaining('exited with code 3') },
  })
  await call(`/v1/sandboxes/${id}`, { key: ACME, method: 'DELETE' })
})

test('files: PUT raw bytes, GET them back, list, DELETE; missing files and bad paths are refused', async () => {
  const id = (await call('/v1/sandboxes', { key: ACME, body: { adapter: 'shell' } })).json.id
  const bytes = Buffer.from([0, 1, 2, 0xff, 0x7b])
  expect((await call(`/v1/sandboxes/${id}/files/in/blob.bin`, { key: ACME, method: 'PUT', raw: bytes })).status).toBe(204)
  // A JSON file is a file like any other: its bytes, not a parsed body.
  expect(
    (
      await call(`/v1/sandboxes/${id}/files/order.json`, {
        key: ACME,
        method: 'PUT',
        raw: Buffer.from('{"items":[{"price":3},{"price":4}]}'),
        headers: { 'content-type': 'application/json' },
      })
    ).status,
  ).toBe(204)
  const total = await call(`/v1/sandboxes/${id}/exec`, {
    key: ACME,
    body: { command: "jq '[.items[].price] | add' order.json > total.txt; cat total.txt" },
  })
  expect(total.json).toMatchObject({ status: 'ok', stdout: '7\n' })
  const back = await call(`/v1/sandboxes/${id}/files/in/blob.bin`, { key: ACME })
  expect(back.headers.get('content-type')).toBe('application/octet-stream')
  expect(Buffer.compare(back.bytes, bytes)).toBe(0)
  expect((await call(`/v1/sandboxes/${id}/files`, { key: ACME })).json.files).toEqual([
    { path: 'in/blob.bin', size: 5 },
    { path: 'order.json', size: 35 },
    { path: 'total.txt', size: 2 },
  ])
  expect((await call(`/v1/sandboxes/${id}/files/total.txt`, { key: ACME, method: 'DELETE' })).status).toBe(204)
  expect((await call(`/v1/sandboxes/${id}/files/total.txt`, { key: ACME })).json).toMatchObject({ error: { code: 'EXECGATE_NOT_FOUND' } })
  expect((await call(`/v1/sandboxes/${id}/files/total.txt`, { key: ACME, method: 'DELETE' })).status).toBe(404)
  const escape = await call(`/v1/sandboxes/${id}/files/a/..%2F..%2Fetc%2Fpasswd`, { key: ACME })
  expect(escape.status).toBe(400)
  expect(escape.json).toMatchObject({ error: { code: 'EXECGATE_WORKSPACE_PATH' } })
  await call(`/v1/sandboxes/${id}`, { key: ACME, method: 'DELETE' })
})

test("another tenant's sandbox answers 404 exactly like a missing one, on every route", async () => {
  const id = (await call('/v1/sandboxes', { key: ACME, body: { adapter: 'shell' } })).json.id
  await call(`/v1/sandboxes/${id}/files/secret.txt`, { key: ACME, method: 'PUT', raw: Buffer.from('acme only') })
  const routes: Array<[string, { method?: string; body?: unknown; raw?: Buffer }]> = [
    ['', {}],
    ['/exec', { body: { command: 'cat secret.txt' } }],
    ['/files', {}],
    ['/files/secret.txt', {}],
    ['/files/secret.txt', { method: 'PUT', raw: Buffer.from('globex was here') }],
    ['/files/secret.txt', { method: 'DELETE' }],
    ['', { method: 'DELETE' }],
  ]
  for (const [suffix, init] of routes) {
    const foreign = await call(`/v1/sandboxes/${id}${suffix}`, { key: GLOBEX, ...init })
    const missing = await call(`/v1/sandboxes/sb-00000000000000000000${suffix}`, { key: GLOBEX, ...init })
    expect({ suffix, status: foreign.status, code: foreign.json?.error?.code }).toEqual({ suffix, status: 404, code: 'EXECGATE_NOT_FOUND' })
    expect(foreign.json.error.message.replace(id, 'ID')).toBe(missing.json.error.message.replace('sb-00000000000000000000', 'ID'))
  }
  expect((await call('/v1/sandboxes', { key: GLOBEX })).json.sandboxes).toEqual([])
  expect((await call(`/v1/sandboxes/${id}/files/secret.txt`, { key: ACME })).text).toBe('acme only')
  await call(`/v1/sandboxes/${id}`, { key: ACME, method: 'DELETE' })
})

test('the per-tenant cap answers 429 EXECGATE_SANDBOX_LIMIT; bad bodies answer 400 naming the field', async () => {
  const ids: string[] = []
  for (let i = 0; i < 3; i++) ids.push((await call('/v1/sandboxes', { key: GLOBEX, body: { adapter: 'shell' } })).json.id)
  const over = await call('/v1/sandboxes', { key: GLOBEX, body: { adapter: 'shell' } })
  expect(over.status).toBe(429)
  expect(over.json).toMatchObject({ error: { code: 'EXECGATE_SANDBOX_LIMIT', message: expect.stringContaining('3 live sandboxes') } })
  // Another tenant is not affected.
  const acme = await call('/v1/sandboxes', { key: ACME, body: { adapter: 'shell' } })
  expect(acme.status).toBe(201)
  expect((await call('/v1/sandboxes', { key: ACME, body: { adapter: 5 } })).json).toMatchObject({
    error: { code: 'EXECGATE_REQUEST_INVALID', message: expect.stringContaining('adapter') },
  })
  expect((await call('/v1/sandboxes', { key: ACME, body: { image: 'x' } })).json).toMatchObject({
    error: { message: expect.stringContaining('image is not a known field') },
  })
  expect((await call(`/v1/sandboxes/${ids[0]}/exec`, { key: GLOBEX, body: { cmd: 'ls' } })).status).toBe(400)
  expect((await call(`/v1/sandboxes/${ids[0]}/exec`, { key: GLOBEX, body: { command: 'ls', timeoutMs: -1 } })).json).toMatchObject({
    error: { message: expect.stringContaining('timeoutMs') },
  })
  const unsupported = await call('/v1/sandboxes', { key: ACME, body: { adapter: 'quickjs' } })
  expect(unsupported.status).toBe(400)
  expect(unsupported.json).toMatchObject({
    error: {
      code: 'EXECGATE_SANDBOX_UNSUPPORTED',
      message: expect.stringContaining('enabled adapters that host sandboxes: shell, process'),
    },
  })
  expect((await call('/v1/sandboxes', { body: {} })).status).toBe(401)
  for (const id of ids) await call(`/v1/sandboxes/${id}`, { key: GLOBEX, method: 'DELETE' })
  await call(`/v1/sandboxes/${acme.json.id}`, { key: ACME, method: 'DELETE' })
})

test('MCP tools start, exec in and stop a sandbox, scoped to the tenant', async () => {
  const connect = async (key: string) => {
    const client = new Client({ name: 'sandbox-test', version: '0.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
    )
    return client
  }
  const acme = await connect(ACME)
  const globex = await connect(GLOBEX)
  try {
    const started = await acme.callTool({
      name: 'sandbox_start',
      arguments: { adapter: 'shell', files: [{ path: 'notes.txt', content: 'b\na\nb\n' }] },
    })
    const id = (started.structuredContent as { id: string }).id
    expect((started.content as Array<{ text: string }>)[0]!.text).toContain(`sandbox ${id} on shell`)
    const sorted = await acme.callTool({
      name: 'sandbox_exec',
      arguments: { sandboxId: id, command: 'sort notes.txt | uniq -c > counts.txt' },
    })
    expect(sorted.isError).toBe(false)
    const read = await acme.callTool({ name: 'sandbox_exec', arguments: { sandboxId: id, command: 'cat counts.txt' } })
    expect(read.structuredContent).toMatchObject({
      status: 'ok',
      stdout: expect.stringMatching(/1 a\n\s+2 b\n$/),
      admission: { lane: 'interactive' },
    })
    const foreign = await globex.callTool({ name: 'sandbox_exec', arguments: { sandboxId: id, command: 'cat counts.txt' } })
    expect(foreign.isError).toBe(true)
    expect((foreign.content as Array<{ text: string }>)[0]!.text).toBe(`no sandbox "${id}"; start one with sandbox_start`)
    expect((await globex.callTool({ name: 'sandbox_stop', arguments: { sandboxId: id } })).isError).toBe(true)
    expect((await acme.callTool({ name: 'sandbox_stop', arguments: { sandboxId: id } })).isError).toBe(false)
    expect(execgate.sandboxes.list({ tenant: 'acme' })).toEqual([])
  } finally {
    await acme.close()
    await globex.close()
  }
})

test('closing the server stops the sandboxes it served, and frees their folders', async () => {
  const own = await createExecgate({
    overrides: {
      execution: { enabled: ['process'] },
      adapters: { process: { persistentDir: path.join(root, 'close') } },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  const running = await serve(own, { port: 0 }, false)
  const created = await fetch(`${running.url}/v1/sandboxes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
  })
  const { id } = (await created.json()) as { id: string }
  expect(foldersUnder(path.join(root, 'close'))).toEqual([id])
  await running.shutdown()
  expect(own.sandboxes.list({ tenant: 'anonymous' })).toEqual([])
  expect(await until(() => foldersUnder(path.join(root, 'close')).length === 0, 5000)).toBe(true)
}, 30_000)
