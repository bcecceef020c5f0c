import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createExecgate, type Execgate } from '../../src'
import { ExecgateClient } from '../../src/client'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, GLOBEX, httpCaller } from '../servers/http-caller'

/** The task routes over real HTTP on loopback, on a real SQLite store, with two tenants. */

let execgate: Execgate
let server: RunningServer
let dataDir: string

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-tasks-http-'))
  execgate = await createExecgate({
    overrides: {
      // process: a bash task whose output streams while it runs.
      execution: { enabled: ['quickjs', 'monty', 'process'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`] },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
  await execgate.execute({ language: 'javascript', code: '1' })
}, 60_000)

afterAll(async () => {
  await server.shutdown()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

const call = httpCaller(() => server.url)

async function settled(id: string, key: string) {
  for (;;) {
    const task = (await call(`/v1/tasks/${id}`, { key })).json
    if (['COMPLETED', 'FAILED', 'TERMINATED', 'SUSPENDED'].includes(task.state)) return task
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('POST /v1/tasks answers 201 with the task; GET shows it COMPLETED with its result; the events stream as SSE', async () => {
  const created = await call('/v1/tasks', {
    key: ACME,
    body: { request: { language: 'javascript', code: 'console.log("hi"); 6 * 7' }, intentId: 'intent-http' },
  })
  expect(created.status).toBe(201)
  expect(created.headers.get('location')).toBe(`/v1/tasks/${created.json.id}`)
  expect(created.json).toMatchObject({ state: 'PENDING', tenant: 'acme', intentId: 'intent-http', lane: 'batch' })
  const done = await settled(created.json.id, ACME)
  expect(done).toMatchObject({ state: 'COMPLETED', result: { status: 'ok', value: 42, stdout: 'hi\n' } })
  const events = await call(`/v1/tasks/${created.json.id}/events`, { key: ACME })
  expect(events.headers.get('content-type')).toBe('text/event-stream')
  const transitions = events.text
    .split('\n\n')
    .filter((block) => block.includes('event: transition'))
    .map((block) => JSON.parse(block.split('data: ')[1]!).to)
  expect(transitions).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'COMPLETED'])
})

test('a live SSE stream carries the transitions as they happen and the output, and ends with the task', async () => {
  const created = await call('/v1/tasks', {
    key: ACME,
    body: { request: { language: 'javascript', code: 'const t = Date.now(); while (Date.now() - t < 300) {}; console.log("out"); 1' } },
  })
  const stream = await call(`/v1/tasks/${created.json.id}/events`, { key: ACME })
  expect(stream.text).toContain('event: transition')
  expect(stream.text).toMatch(/"to":"COMPLETED"/)
  expect(stream.text).toContain('event: stdout\ndata: {"chunk":"out\\n"}')
})

test('a reader that connects mid-run is sent what the run already printed, then the rest as it comes, each once', async () => {
  // A console page opens the task's stream after the submit: the run's first lines are out by then.
  const request = { language: 'bash', adapter: 'process', code: 'echo early; sleep 1.5; echo late' }
  const created = await call('/v1/tasks', { key: ACME, body: { request } })
  while ((await call(`/v1/tasks/${created.json.id}`, { key: ACME })).json.state !== 'RUNNING')
    await new Promise((resolve) => setTimeout(resolve, 10))
  await new Promise((resolve) => setTimeout(resolve, 400))
  const stream = await call(`/v1/tasks/${created.json.id}/events`, { key: ACME })
  const seen = stream.text
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const data = JSON.parse(block.split('data: ')[1]!)
      return block.includes('event: transition') ? data.to : `${block.match(/event: (\w+)/)![1]} ${data.chunk.trim()}`
    })
  expect(seen).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'stdout early', 'stdout late', 'COMPLETED'])
})

test("the events carry each display() item as an output event while the task runs, and the task's result keeps them", async () => {
  const client = new ExecgateClient({ url: server.url, apiKey: ACME })
  // Busy first: the stream is live, so the reader must be there before the first item (the log replays transitions only).
  const code = [
    'let t = Date.now(); while (Date.now() - t < 1000) {}',
    'display({ step: 1 })',
    't = Date.now(); while (Date.now() - t < 600) {}',
    "console.log('after')",
    "display([{ region: 'north', revenue: 15 }])",
    '1',
  ].join('\n')
  const task = await client.tasks.submit({ request: { language: 'javascript', code } })
  const seen: string[] = []
  for await (const event of client.tasks.events(task.id)) {
    if (event.type === 'transition') seen.push(event.event.to)
    else if (event.type === 'output') seen.push(`output ${event.index} ${event.output.kind} attempt ${event.attempt}`)
    else seen.push(`${event.type} ${event.chunk.trim()}`)
  }
  // The first item went out while the code was busy, before what it printed after; both before the task's end.
  expect(seen).toEqual([
    'PENDING',
    'SPAWNING',
    'RUNNING',
    'output 0 json attempt 1',
    'stdout after',
    'output 1 table attempt 1',
    'COMPLETED',
  ])
  const done = await client.tasks.get(task.id)
  expect(done?.result?.outputs).toEqual([
    { kind: 'json', mimeType: 'application/json', data: { step: 1 }, bytes: expect.any(Number) },
    { kind: 'table', columns: ['region', 'revenue'], rows: [['north', 15]], rowCount: 1, bytes: expect.any(Number) },
  ])
})

test('a reader that connects after the task ended gets its display() items from the stored result, before its end', async () => {
  const client = new ExecgateClient({ url: server.url, apiKey: ACME })
  const task = await client.tasks.submit({ request: { language: 'javascript', code: 'display({ step: 1 })\ndisplay({ step: 2 })\n1' } })
  const done = await settled(task.id, ACME)
  expect(done.state).toBe('COMPLETED')
  const seen: string[] = []
  for await (const event of client.tasks.events(task.id)) {
    if (event.type === 'transition') seen.push(event.event.to)
    else if (event.type === 'output') seen.push(`output ${event.index} ${event.output.kind}`)
  }
  expect(seen).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'output 0 json', 'output 1 json', 'COMPLETED'])
})

test('Idempotency-Key returns the same task; list filters by state and intentId and pages; tenants are apart', async () => {
  const body = { request: { language: 'javascript', code: '1' }, intentId: 'intent-list' }
  const first = await call('/v1/tasks', { key: GLOBEX, body, headers: { 'idempotency-key': 'req-1' } })
  const again = await call('/v1/tasks', { key: GLOBEX, body, headers: { 'idempotency-key': 'req-1' } })
  expect(again.json.id).toBe(first.json.id)
  const second = await call('/v1/tasks', { key: GLOBEX, body })
  await settled(second.json.id, GLOBEX)
  await settled(first.json.id, GLOBEX)
  const page1 = await call('/v1/tasks?intentId=intent-list&state=COMPLETED&limit=1', { key: GLOBEX })
  expect(page1.json.tasks).toHaveLength(1)
  const page2 = await call(`/v1/tasks?intentId=intent-list&state=COMPLETED&limit=1&cursor=${page1.json.nextCursor}`, { key: GLOBEX })
  expect([page1.json.tasks[0].id, page2.json.tasks[0].id]).toEqual([first.json.id, second.json.id])
  expect(page2.json.nextCursor).toBeUndefined()
  expect((await call('/v1/tasks?intentId=intent-list', { key: ACME })).json.tasks).toEqual([])
  expect((await call(`/v1/tasks/${first.json.id}`, { key: ACME })).status).toBe(404)
  expect((await call(`/v1/tasks/${first.json.id}`, { key: ACME, method: 'DELETE' })).status).toBe(404)
  expect((await call(`/v1/tasks/${first.json.id}/events`, { key: ACME })).status).toBe(404)
  expect((await call('/v1/tasks?state=DONE', { key: ACME })).status).toBe(400)
})

test('suspend, resume with another limit, DELETE terminates; a conflict answers 409', async () => {
  const blockers = await Promise.all(
    [0, 1, 2, 3].map(() =>
      call('/v1/tasks', {
        key: ACME,
        body: { request: { language: 'javascript', code: 'const t = Date.now(); while (Date.now() - t < 300) {}; 1' } },
      }),
    ),
  )
  const queued = await call('/v1/tasks', { key: ACME, body: { request: { language: 'javascript', code: '2' } } })
  const doomed = await call('/v1/tasks', { key: ACME, body: { request: { language: 'javascript', code: '3' } } })
  expect((await call(`/v1/tasks/${queued.json.id}/suspend`, { key: ACME, method: 'POST' })).json.state).toBe('SUSPENDED')
  expect((await call(`/v1/tasks/${doomed.json.id}`, { key: ACME, method: 'DELETE' })).json).toMatchObject({
    state: 'TERMINATED',
    reason: 'cancelled by the caller',
  })
  const conflict = await call(`/v1/tasks/${doomed.json.id}`, { key: ACME, method: 'DELETE' })
  expect(conflict.status).toBe(409)
  expect(conflict.json.error.code).toBe('EXECGATE_TASK_CONFLICT')
  expect((await call(`/v1/tasks/${queued.json.id}/resume`, { key: ACME, body: { code: 'x' } })).status).toBe(400)
  expect((await call(`/v1/tasks/${queued.json.id}/resume`, { key: ACME, body: { timeoutMs: 4000 } })).json.state).toBe('PENDING')
  expect(await settled(queued.json.id, ACME)).toMatchObject({ state: 'COMPLETED', result: { value: 2 } })
  for (const blocker of blockers) await settled(blocker.json.id, ACME)
})

test('a bad task is 400 naming the field; so is an unknown dependency', async () => {
  const bad = await call('/v1/tasks', { key: ACME, body: { request: { language: 'cobol', code: '1' } } })
  expect(bad.status).toBe(400)
  expect(bad.json.error.message).toMatch(/request.language must be one of/)
  const unknown = await call('/v1/tasks', { key: ACME, body: { request: { language: 'javascript', code: '1' }, dependencies: ['nope'] } })
  expect(unknown.status).toBe(400)
  expect(unknown.json.error.message).toMatch(/unknown dependency "nope"/)
})

test("MCP submit_task and get_task, as the calling tenant's tasks", async () => {
  const client = new Client({ name: 'execgate-test', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${GLOBEX}` } } }),
  )
  try {
    const submitted = await client.callTool({ name: 'submit_task', arguments: { language: 'python', code: '2 ** 10', priority: 3 } })
    const id = (submitted.structuredContent as { id: string }).id
    expect(submitted.structuredContent).toMatchObject({ state: 'PENDING', tenant: 'globex', priority: 3 })
    const got = await client.callTool({ name: 'get_task', arguments: { id, waitMs: 10_000 } })
    expect(got.structuredContent).toMatchObject({ state: 'COMPLETED', result: { value: 1024 } })
    expect((got.content as Array<{ text: string }>)[0]!.text).toBe(`task ${id} is COMPLETED value: 1024`)
    expect((await call(`/v1/tasks/${id}`, { key: ACME })).status).toBe(404)
  } finally {
    await client.close()
  }
})
