import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'
import { traceIdFrom } from '../../src/server/app'

const ACME = 'acme-key-0123456789abcdef'
const GLOBEX = 'globex-key-0123456789abcdef'
const INITECH = 'initech-key-0123456789abcdef'

let execgate: Execgate
let server: RunningServer
beforeAll(async () => {
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs', 'monty'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: { profiles: { strict: { wallTimeMs: 2000, memoryMb: 64, filesystem: 'sandboxed' }, roomy: { wallTimeMs: 10_000 } } },
      server: {
        apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`, `initech=${INITECH}`],
        tenants: { acme: { profile: 'strict' }, initech: { profile: 'strict' }, globex: { ratePerMinute: 3, profiles: ['roomy'] } },
        bodyLimitBytes: 64 * 1024,
      },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
  // Warm the worker threads, so the strict profile's time limit measures the code, not a cold start.
  await execgate.execute({ language: 'javascript', code: '1' })
}, 60_000)
afterAll(() => server.shutdown())

async function call(
  path: string,
  init: { method?: string; key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
) {
  const response = await fetch(server.url + path, {
    method: init.method ?? (init.body !== undefined || init.raw !== undefined ? 'POST' : 'GET'),
    headers: {
      ...(init.key ? { authorization: `Bearer ${init.key}` } : {}),
      ...(init.body !== undefined || init.raw !== undefined ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
  })
  const text = await response.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, headers: response.headers, text, json }
}

describe('HTTP API over real HTTP on loopback', () => {
  test('POST /v1/executions runs code and answers the ExecutionResult', async () => {
    const response = await call('/v1/executions', { key: ACME, body: { language: 'javascript', code: "console.log('hi'); 6 * 7" } })
    expect(response.status).toBe(200)
    expect(response.json).toMatchObject({ status: 'ok', adapter: 'quickjs', stdout: 'hi\n', value: 42 })
  })

  test('request files are the workspace; a session keeps its workspace, and another tenant never sees it', async () => {
    const files = [{ path: 'orders.csv', content: 'tea,3.50\ncake,4.00\n' }]
    const code =
      "const rows = (await read_file('orders.csv')).trim().split('\\n'); await write_file('total.txt', String(rows.length)); rows.length"
    const first = await call('/v1/executions', { key: ACME, body: { language: 'javascript', code, files, sessionId: 'shop-1' } })
    expect(first.json).toMatchObject({
      status: 'ok',
      value: 2,
      files: [{ path: 'total.txt', content: '2' }],
      hostCalls: [
        { name: 'read_file', ok: true },
        { name: 'write_file', ok: true },
      ],
    })
    const later = await call('/v1/executions', {
      key: ACME,
      body: { language: 'javascript', code: "await read_file('total.txt')", sessionId: 'shop-1' },
    })
    expect(later.json).toMatchObject({ status: 'ok', value: '2' })
    const otherTenant = await call('/v1/executions', {
      key: INITECH,
      body: { language: 'javascript', code: 'await list_files()', sessionId: 'shop-1' },
    })
    expect(otherTenant.json).toMatchObject({ status: 'ok', value: [] })
    const badPath = await call('/v1/executions', {
      key: ACME,
      body: { language: 'javascript', code: '1', files: [{ path: '/etc/passwd', content: 'x' }] },
    })
    expect(badPath.json).toMatchObject({
      status: 'invalid_request',
      message: expect.stringContaining('files[0].path: workspace path "/etc/passwd" refused: absolute paths must be inside /workspace'),
    })
  })

  test("a run's failure is still a 200 with its status; the tenant's profile applies", async () => {
    const response = await call('/v1/executions', { key: ACME, body: { language: 'javascript', code: 'while (true) {}' } })
    expect(response.status).toBe(200)
    expect(response.json).toMatchObject({ status: 'timeout' })
    expect(response.json.message).toContain('2000 ms') // acme's strict profile
  })

  test('an incoming traceparent becomes the traceId', async () => {
    const response = await call('/v1/executions', {
      key: ACME,
      body: { language: 'python', code: '1 + 1' },
      headers: { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
    })
    expect(response.json).toMatchObject({ status: 'ok', value: 2, traceId: '0af7651916cd43dd8448eb211c80319c' })
    expect(traceIdFrom('00-00000000000000000000000000000000-b7ad6b7169203331-01')).toBeUndefined()
    expect(traceIdFrom('garbage')).toBeUndefined()
  })

  test('bad JSON, wrong types, unknown fields and unknown languages get 400 with a code naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [undefined, /not valid JSON/],
      [{ language: 'javascript', code: 7 }, /code must be string/],
      [{ language: 'cobol', code: 'x' }, /language must be one of: javascript, typescript, python, bash/],
      [{ language: 'python', code: '1', colour: 'red' }, /colour is not a known field/],
      [{ language: 'python', code: '1', timeoutMs: -5 }, /timeoutMs must be >= 1/],
    ]
    for (const [body, message] of cases) {
      const response = await call('/v1/executions', { key: ACME, ...(body === undefined ? { raw: '{bad' } : { body }) })
      expect({ status: response.status, code: response.json?.error?.code }).toEqual({ status: 400, code: 'EXECGATE_REQUEST_INVALID' })
      expect(response.json.error.message).toMatch(message)
      expect(response.text).not.toMatch(/\n\s+at /)
    }
  })

  test('an oversize body gets 413', async () => {
    const response = await call('/v1/executions', { key: ACME, body: { language: 'python', code: `x = '${'a'.repeat(70 * 1024)}'` } })
    expect({ status: response.status, code: response.json?.error?.code }).toEqual({ status: 413, code: 'EXECGATE_BODY_TOO_LARGE' })
  })

  test('missing and wrong keys get 401; health, readiness, metrics and docs stay open', async () => {
    expect((await call('/v1/languages')).status).toBe(401)
    const wrong = await call('/v1/languages', { key: 'not-a-key-0123456789' })
    expect({ status: wrong.status, code: wrong.json.error.code, message: wrong.json.error.message }).toEqual({
      status: 401,
      code: 'EXECGATE_UNAUTHORIZED',
      message: '[execgate] the API key is not valid',
    })
    expect((await call('/healthz')).json).toEqual({ status: 'up' })
    expect((await call('/readyz')).json).toMatchObject({ ready: true, available: expect.arrayContaining(['quickjs', 'monty']) })
    expect((await call('/docs/json')).json).toMatchObject({
      openapi: '3.1.0',
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- package.json read where it is compared
      info: { version: require('../../package.json').version },
      paths: { '/v1/executions': expect.any(Object) },
    })
  })

  test('a policy profile the tenant may not use gets 403; one it may use applies', async () => {
    const forbidden = await call('/v1/executions', {
      key: ACME,
      body: { language: 'python', code: '1' },
      headers: { 'x-execgate-profile': 'roomy' },
    })
    expect({ status: forbidden.status, code: forbidden.json.error.code }).toEqual({ status: 403, code: 'EXECGATE_FORBIDDEN' })
    expect(forbidden.json.error.message).toContain('tenant acme may not use the policy profile "roomy"')
    const allowed = await call('/v1/executions', {
      key: GLOBEX,
      body: { language: 'python', code: '1', timeoutMs: 8000 },
      headers: { 'x-execgate-profile': 'roomy' },
    })
    expect(allowed.json).toMatchObject({ status: 'ok' })
  })

  test('GET /v1/languages, /v1/adapters and POST /v1/validate', async () => {
    expect((await call('/v1/languages', { key: ACME })).json).toEqual({ languages: ['javascript', 'typescript', 'python'] })
    const adapters = await call('/v1/adapters', { key: ACME })
    expect(adapters.json).toMatchObject({ active: 'auto', adapters: [{ name: 'quickjs' }, { name: 'monty' }] })
    const report = await call('/v1/validate', { key: ACME, body: { language: 'javascript', code: "require('fs')" } })
    expect(report.json).toMatchObject({ valid: false, issues: [expect.objectContaining({ code: 'import_not_allowed' })] })
    expect((await call('/v1/validate', { key: ACME, body: { language: 'cobol', code: 'x' } })).status).toBe(400)
  })

  test('an unknown session cannot be closed: 404', async () => {
    const response = await call('/v1/sessions/s-1', { method: 'DELETE', key: ACME })
    expect({ status: response.status, code: response.json.error.code }).toEqual({ status: 404, code: 'EXECGATE_NOT_FOUND' })
    expect(response.json.error.message).toContain('for tenant acme')
    expect((await call('/v1/nope', { key: ACME })).status).toBe(404)
  })

  test('streaming: with Accept: text/event-stream, output events come first and the result last', async () => {
    const response = await call('/v1/executions', {
      key: ACME,
      body: { language: 'python', code: "print('a')\nprint('b')\n7" },
      headers: { accept: 'text/event-stream' },
    })
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const events = response.text
      .trim()
      .split('\n\n')
      .map((block) => ({ event: /^event: (.*)$/m.exec(block)?.[1], data: JSON.parse(/^data: (.*)$/m.exec(block)![1]!) }))
    expect(events.at(-1)).toMatchObject({ event: 'result', data: { status: 'ok', value: 7 } })
    expect(
      events
        .filter((item) => item.event === 'stdout')
        .map((item) => item.data.chunk)
        .join(''),
    ).toBe('a\nb\n')
  })

  test('over the rate limit: 429 with Retry-After', async () => {
    const statuses: number[] = []
    let retryAfter: string | null = null
    for (let i = 0; i < 5; i++) {
      const response = await call('/v1/languages', { key: GLOBEX })
      statuses.push(response.status)
      if (response.status === 429) {
        retryAfter = response.headers.get('retry-after')
        expect(response.json.error.code).toBe('EXECGATE_RATE_LIMITED')
      }
    }
    expect(statuses.filter((status) => status === 429).length).toBeGreaterThanOrEqual(2) // 3 a minute, one used above
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1)
  })

  test('/metrics counts executions by adapter, language and status, and rejected requests', async () => {
    const text = (await call('/metrics')).text
    expect(text).toMatch(/execgate_executions_total\{adapter="quickjs",language="javascript",status="ok"\} \d+/)
    expect(text).toMatch(/execgate_rejected_requests_total\{reason="no_key"\} \d+/)
    expect(text).toMatch(/execgate_rejected_requests_total\{reason="rate_limit"\} \d+/)
    expect(text).toMatch(/execgate_execution_duration_seconds_bucket\{le="[\d.]+",adapter="monty"\}/)
    expect(text).toContain('execgate_adapter_health{adapter="quickjs"}')
  })

  test("/metrics shows the ledger's write queue: records written, waiting and lost", async () => {
    await execgate.ledger.flush()
    const text = (await call('/metrics')).text
    expect(Number(/^execgate_ledger_records_written_total (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0)
    expect(text).toMatch(/^execgate_ledger_queue_depth \d+$/m)
    expect(text).toMatch(/^execgate_ledger_records_lost_total 0$/m)
  })
})

describe('an open server', () => {
  test('without keys it binds loopback only, even when asked for all interfaces', async () => {
    const open = await createExecgate({
      overrides: { execution: { enabled: ['quickjs'] }, readiness: { enabled: false }, log: { level: 'silent' } },
    })
    const running = await serve(open, { host: '0.0.0.0', port: 0 }, false)
    try {
      expect(running.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const response = await fetch(`${running.url}/v1/executions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ language: 'javascript', code: '1 + 1' }),
      })
      expect(await response.json()).toMatchObject({ status: 'ok', value: 2 })
    } finally {
      await running.shutdown()
    }
  })

  test('graceful shutdown lets a run in flight finish and refuses new ones', async () => {
    const open = await createExecgate({
      overrides: { execution: { enabled: ['quickjs'] }, readiness: { enabled: false }, log: { level: 'silent' } },
    })
    const running = await serve(open, { port: 0 }, false)
    const inFlight = fetch(`${running.url}/v1/executions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ language: 'javascript', code: 'const end = Date.now() + 500; while (Date.now() < end) {} 42' }),
    })
    await new Promise((resolve) => setTimeout(resolve, 100))
    const stopping = running.shutdown()
    expect(await (await inFlight).json()).toMatchObject({ status: 'ok', value: 42 })
    await stopping
  })
})

describe('sessions belong to their tenant', () => {
  test("the same session id from two tenants names two sessions; neither can close the other's", async () => {
    const { SwitchableAdapter } = await import('../routing/fakes')
    const { QuickJsAdapter } = await import('../../adapters/quickjs')
    // A session-keeping adapter that records the session ids it is given.
    const seen: string[] = []
    const closed: string[] = []
    const sessions = Object.assign(new SwitchableAdapter('sessions', new QuickJsAdapter(), 1), {})
    Object.defineProperty(sessions, 'capabilities', { value: { ...sessions.capabilities, sessions: true } })
    const execute = sessions.execute.bind(sessions)
    sessions.execute = async (request, context) => (request.sessionId && seen.push(request.sessionId), execute(request, context))
    ;(sessions as unknown as { closeSession(id: string): Promise<boolean> }).closeSession = async (id) =>
      seen.includes(id) && !closed.includes(id) ? (closed.push(id), true) : false
    const gate = await createExecgate({
      adapters: [sessions],
      overrides: { readiness: { enabled: false }, log: { level: 'silent' }, server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`] } },
    })
    const running = await serve(gate, { port: 0 }, false)
    const post = (key: string) =>
      fetch(`${running.url}/v1/executions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ language: 'javascript', code: '1', sessionId: 'chat-1' }),
      })
    const remove = (key: string) =>
      fetch(`${running.url}/v1/sessions/chat-1`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } })
    try {
      expect(((await (await post(ACME)).json()) as { status: string }).status).toBe('ok')
      expect(seen).toEqual(['acme:chat-1'])
      expect((await remove(GLOBEX)).status).toBe(404) // globex has no chat-1, and cannot reach acme's
      expect((await post(GLOBEX)).status).toBe(200)
      expect(seen).toEqual(['acme:chat-1', 'globex:chat-1'])
      expect((await remove(ACME)).status).toBe(204)
      expect(closed).toEqual(['acme:chat-1'])
    } finally {
      await running.shutdown()
    }
  }, 30_000)
})
