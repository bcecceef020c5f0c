import { execFileSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import Fastify from 'fastify'
import { createExecgate, tokens, type Execgate, type ExecutionListener } from '../../src'
import { ActivityRecorder } from '../../src/server/activity'
import { registerConsoleAssets } from '../../src/server/console-assets'
import { serve, type RunningServer } from '../../src/server/serve'

/**
 * The console's server side over real HTTP on loopback: its files (content types, caching, gzip, CSP) and the public
 * routes behind its Adapters and Activity pages, with API keys and tenants.
 */

const ACME = 'acme-key-0123456789abcdef'
const GLOBEX = 'globex-key-0123456789abcdef'
const ROOT = path.resolve(__dirname, '..', '..')

let execgate: Execgate
let server: RunningServer
let dataDir: string
beforeAll(async () => {
  execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'build-console.mjs')], { cwd: ROOT, stdio: 'pipe' })
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-console-http-'))
  execgate = await createExecgate({
    overrides: {
      // The future adapter becoming available is a switch of the active adapter: the timeline has one to show.
      execution: { enabled: ['quickjs', 'monty'], futureAdapter: 'monty' },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir },
      security: { profiles: { strict: { wallTimeMs: 2000 }, roomy: { wallTimeMs: 10_000 } } },
      server: {
        apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`],
        tenants: { acme: { profile: 'strict' }, globex: { profiles: ['roomy'] } },
        activityCapacity: 50,
      },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 60_000)
afterAll(async () => {
  await server.shutdown()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

async function call(
  url: string,
  {
    key,
    headers = {},
    body,
    method = body === undefined ? 'GET' : 'POST',
  }: { key?: string; headers?: Record<string, string>; method?: string; body?: unknown } = {},
) {
  const response = await fetch(server.url + url, {
    method,
    redirect: 'manual',
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body ? { body: JSON.stringify(body) } : {}),
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, text, json: /^[[{]/.test(text) ? JSON.parse(text) : undefined }
}

describe('the console files', () => {
  test('/console redirects to /console/, which serves index.html under a strict CSP, revalidated on each load', async () => {
    const bare = await call('/console')
    expect([bare.status, bare.headers.get('location')]).toEqual([302, 'console/'])
    const index = await call('/console/')
    expect(index.status).toBe(200)
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(index.headers.get('cache-control')).toBe('no-cache')
    expect(index.headers.get('content-security-policy')).toContain("script-src 'self'")
    expect(index.headers.get('content-security-policy')).toContain("connect-src 'self'")
    expect(index.text).toMatch(/<script type="module" src="\.\/console-[A-Z0-9]+\.js"><\/script>/)
    const again = await call('/console/', { headers: { 'if-none-match': index.headers.get('etag')! } })
    expect(again.status).toBe(304)
  })

  test('the bundle and stylesheet: their content types, cached for good (hashed names), gzipped when asked', async () => {
    const index = (await call('/console/')).text
    const script = /src="\.\/([^"]+\.js)"/.exec(index)![1]!
    const style = /href="\.\/([^"]+\.css)"/.exec(index)![1]!
    const js = await fetch(`${server.url}/console/${script}`, { headers: { 'accept-encoding': 'gzip' } })
    expect([
      js.headers.get('content-type'),
      js.headers.get('cache-control'),
      js.headers.get('content-encoding'),
      js.headers.get('x-content-type-options'),
    ]).toEqual(['text/javascript; charset=utf-8', 'public, max-age=31536000, immutable', 'gzip', 'nosniff'])
    const body = await js.text() // fetch gunzips it
    expect(body).toBe(fs.readFileSync(path.join(ROOT, 'dist', 'console', script), 'utf8'))
    expect((await call(`/console/${style}`)).headers.get('content-type')).toBe('text/css; charset=utf-8')
    // No file of the bundle reaches for another host: everything the console needs comes from here. The names that
    // look like addresses are identifiers compared as text, never fetched: XML namespaces, and the receipt check's
    // in-toto statement and execgate predicate types.
    const identifiers = /(?!www\.w3\.org\/|in-toto\.io\/Statement\/v1"|execgate\.dev\/receipt\/(run|plan)\/v1")/
    expect(body).not.toMatch(new RegExp(`https?:\\/\\/${identifiers.source}[a-z0-9.-]+\\.[a-z]{2,}\\/`, 'i'))
  })

  test('an unknown file, or a path that tries to leave the folder, is a plain 404', async () => {
    for (const url of ['/console/missing.js', '/console/..%2Fpackage.json', '/console/%2e%2e%2fserve.js']) {
      const response = await call(url)
      expect([url, response.status, response.json?.error?.code]).toEqual([url, 404, 'EXECGATE_NOT_FOUND'])
    }
  })

  test('a server whose console is not built says how to build it', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-no-console-'))
    const app = Fastify()
    app.setErrorHandler((error: Error & { code?: string }, _request, reply) =>
      reply.code(404).send({ code: error.code, message: error.message }),
    )
    registerConsoleAssets(app, empty)
    try {
      await app.listen({ host: '127.0.0.1', port: 0 })
      const response = await fetch(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/console/`)
      expect(await response.json()).toEqual({
        code: 'EXECGATE_NOT_FOUND',
        message: '[execgate] the console is not built: run npm run build (it bundles console/ into dist/console)',
      })
    } finally {
      await app.close()
      fs.rmSync(empty, { recursive: true, force: true })
    }
  })
})

describe('the routes behind the console', () => {
  test("GET /v1/activity: each tenant sees only its own runs, its tasks' included, behind the key", async () => {
    for (let index = 0; index < 2; index++) await call('/v1/executions', { key: ACME, body: { language: 'javascript', code: `${index}` } })
    await call('/v1/executions', { key: ACME, body: { language: 'python', code: '1', lane: 'interactive' } })
    const task = (await call('/v1/tasks', { key: ACME, body: { request: { language: 'javascript', code: '2' } } })).json
    while ((await call(`/v1/tasks/${task.id}`, { key: ACME })).json.state !== 'COMPLETED')
      await new Promise((resolve) => setTimeout(resolve, 20))
    await call('/v1/executions', { key: GLOBEX, body: { language: 'javascript', code: 'throw new Error("x")' } })
    const acme = (await call('/v1/activity?windowSeconds=60&bucketSeconds=10', { key: ACME })).json
    expect(acme).toMatchObject({ capacity: 50, bucketMs: 10_000, total: 4, statuses: { ok: 4 } })
    expect(acme.buckets).toHaveLength(6)
    expect(
      acme.series.map((series: { adapter: string; lane: string; count: number }) => [series.adapter, series.lane, series.count]),
    ).toEqual([
      ['quickjs', 'batch', 3],
      ['monty', 'interactive', 1],
    ])
    const globex = (await call('/v1/activity', { key: GLOBEX })).json
    expect(globex).toMatchObject({ total: 1, statuses: { error: 1 }, bucketMs: 5_000 })
    expect((await call('/v1/activity')).status).toBe(401)
    expect((await call('/v1/activity?bucketSeconds=1&windowSeconds=3600', { key: ACME })).json.error.message).toContain(
      'at most 720 buckets',
    )
  })

  test('GET /v1/readiness/events: health changes and switches with their reasons, oldest first, bounded', async () => {
    await execgate.checkNow()
    const { json } = await call('/v1/readiness/events', { key: GLOBEX })
    expect(json.capacity).toBe(200)
    expect(json.events).toEqual(
      expect.arrayContaining([
        { type: 'health', adapter: 'quickjs', from: 'unknown', to: 'available', at: expect.any(String) },
        { type: 'switch', from: 'auto', to: 'monty', reason: 'the future adapter monty is available', at: expect.any(String) },
      ]),
    )
    expect(json.events.at(-1).type).toBe('switch')
    expect((await call('/v1/readiness/events?limit=1', { key: GLOBEX })).json.events).toEqual([json.events.at(-1)])
  })

  test("GET /v1/adapters/:name/policy: the tenant's policy, a profile it may use, never one it may not", async () => {
    const acme = (await call('/v1/adapters/quickjs/policy', { key: ACME })).json
    expect(acme).toMatchObject({ profile: 'strict', adapter: 'quickjs', usable: true })
    expect(acme.rows.find((row: { limit: string }) => row.limit === 'wallTime')).toEqual({
      limit: 'wallTime',
      setting: '2000 ms',
      enforcement: 'hard',
      required: false,
      satisfied: true,
    })
    expect(acme.rows.map((row: { limit: string; enforcement: string }) => [row.limit, row.enforcement])).toEqual(
      execgate.explainPolicy('quickjs', 'strict').rows.map((row) => [row.limit, row.enforcement]),
    )
    const globexDefault = (await call('/v1/adapters/monty/policy', { key: GLOBEX })).json
    expect([globexDefault.profile, globexDefault.rows[0].setting]).toEqual([null, '5000 ms'])
    expect((await call('/v1/adapters/monty/policy?profile=roomy', { key: GLOBEX })).json.rows[0].setting).toBe('10000 ms')
    const forbidden = await call('/v1/adapters/monty/policy?profile=roomy', { key: ACME })
    expect([forbidden.status, forbidden.json.error.code]).toEqual([403, 'EXECGATE_FORBIDDEN'])
    const unknown = await call('/v1/adapters/pyodide/policy', { key: ACME })
    expect([unknown.status, unknown.json.error.message]).toEqual([
      404,
      '[execgate] no adapter "pyodide" is enabled; enabled: quickjs, monty',
    ])
  })

  test('GET /v1/tasks?order= takes oldest or newest only', async () => {
    const response = await call('/v1/tasks?order=random', { key: ACME })
    expect([response.status, response.json.error.message]).toEqual([400, '[execgate] invalid request: order must be oldest or newest'])
  })

  test('the OpenAPI document lists every route the console uses', async () => {
    const { paths } = (await call('/docs/json')).json
    for (const route of [
      '/v1/activity',
      '/v1/readiness/events',
      '/v1/adapters/{name}/policy',
      '/v1/tasks',
      '/v1/tasks/{id}',
      '/v1/tasks/{id}/events',
      '/v1/tasks/{id}/suspend',
      '/v1/tasks/{id}/resume',
      '/console/',
    ])
      expect(Object.keys(paths)).toContain(route)
  })

  test('a closed server stops recording activity and listening to the readiness monitor', async () => {
    const { buildServer } = await import('../../src/server/app')
    const { createLogger } = await import('../../src/observability/logger')
    // Health only: the server's metrics also listen to switches, and keep listening after it closes.
    const listeners = () => execgate.readiness.listenerCount('health')
    const before = listeners()
    const recorders = () =>
      execgate.container.getAll<ExecutionListener>(tokens.ExecutionListener).filter((listener) => listener instanceof ActivityRecorder)
        .length
    const recordersBefore = recorders()
    const { app } = buildServer({ execgate, logger: createLogger('silent'), tenants: new Map(), bodyLimitBytes: 1 << 20 })
    expect([listeners(), recorders()]).toEqual([before + 1, recordersBefore + 1])
    await app.close()
    expect([listeners(), recorders()]).toEqual([before, recordersBefore])
  })
})
