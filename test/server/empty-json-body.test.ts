import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, httpCaller } from '../servers/http-caller'

/**
 * Many HTTP clients send `content-type: application/json` on every call, bodiless ones too. Over real HTTP on
 * loopback: DELETE of a sandbox and a task, and the task's suspend/resume POSTs, with that header and no body, answer
 * as they do without the header; a body that is present is still parsed strictly.
 */

let execgate: Execgate
let server: RunningServer
let dataDir: string

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-empty-body-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs', 'shell'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir },
      server: { apiKeys: [`acme=${ACME}`] },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 60_000)

afterAll(async () => {
  await server.shutdown()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

const call = httpCaller(() => server.url)
const JSON_TYPE = { 'content-type': 'application/json' }

test('DELETE /v1/sandboxes/:id with a JSON content type and no body stops the sandbox (204)', async () => {
  const created = await call('/v1/sandboxes', { key: ACME, body: { adapter: 'shell' } })
  expect(created.status).toBe(201)
  const stopped = await call(`/v1/sandboxes/${created.json.id}`, { key: ACME, method: 'DELETE', headers: JSON_TYPE })
  expect(stopped.status).toBe(204)
  expect((await call(`/v1/sandboxes/${created.json.id}`, { key: ACME })).status).toBe(404)
})

test('suspend, resume and cancel POST/DELETE with a JSON content type and no body', async () => {
  // A task that runs a while: suspend takes a PENDING or RUNNING one, so it is in a state each action accepts.
  const held = await call('/v1/tasks', {
    key: ACME,
    body: { request: { language: 'javascript', code: 'const t = Date.now(); while (Date.now() - t < 4000) {}; 1' } },
  })
  expect(held.status).toBe(201)
  const suspended = await call(`/v1/tasks/${held.json.id}/suspend`, { key: ACME, method: 'POST', headers: JSON_TYPE })
  expect([suspended.status, suspended.json.state]).toEqual([200, 'SUSPENDED'])
  const resumed = await call(`/v1/tasks/${held.json.id}/resume`, { key: ACME, method: 'POST', headers: JSON_TYPE })
  expect([resumed.status, resumed.json.state]).toEqual([200, 'PENDING'])
  const cancelled = await call(`/v1/tasks/${held.json.id}`, { key: ACME, method: 'DELETE', headers: JSON_TYPE })
  expect([cancelled.status, cancelled.json.state]).toEqual([200, 'TERMINATED'])
})

test('a body that is present is still JSON, parsed strictly: malformed and prototype-poisoning bodies answer 400', async () => {
  const malformed = await call('/v1/executions', { key: ACME, method: 'POST', headers: JSON_TYPE, raw: undefined, body: undefined })
  // No body on a route that needs one: the route's own validation answers, in execgate's error shape.
  expect([malformed.status, malformed.json.error.code]).toEqual([400, 'EXECGATE_REQUEST_INVALID'])
  const broken = await fetch(`${server.url}/v1/executions`, {
    method: 'POST',
    headers: { ...JSON_TYPE, authorization: `Bearer ${ACME}` },
    body: '{"language":',
  })
  expect(broken.status).toBe(400)
  const poisoned = await fetch(`${server.url}/v1/executions`, {
    method: 'POST',
    headers: { ...JSON_TYPE, authorization: `Bearer ${ACME}` },
    body: '{"language":"javascript","code":"1","__proto__":{"x":1}}',
  })
  expect(poisoned.status).toBe(400)
})
