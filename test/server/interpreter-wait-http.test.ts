import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'

/**
 * EXECGATE_INTERPRETER_WAIT over HTTP: a run that meets pyodide still warming up and whose time limit passes while it
 * waits is answered 200 with its `timeout` result, and the result's `retryAfterMs` as a `Retry-After` header (whole
 * seconds, at least 1), so a plain HTTP client knows when to come back. A real server on loopback, a real cold pyodide;
 * no clock is asserted (loading CPython takes seconds on any machine, far past the run's 300 ms limit).
 */
const overrides = {
  execution: { enabled: ['pyodide'] },
  readiness: { enabled: false },
  log: { level: 'silent' as const },
  adapters: { pyodide: { poolSize: 1 } },
}

describe('POST /v1/executions while pyodide is still warming up', () => {
  let execgate: Execgate
  let server: RunningServer
  // shutdown() disposes execgate too.
  afterAll(() => (server ? server.shutdown() : execgate?.dispose()))

  it('answers 200 timeout EXECGATE_INTERPRETER_WAIT with Retry-After; once warm, the same request runs', async () => {
    execgate = await createExecgate({ overrides, warm: false })
    server = await serve(execgate, { port: 0 }, false)
    // Warmed as `execgate serve` warms it behind the first tier (serve warms the first tier only).
    const warming = execgate.ready(['pyodide'])
    const post = () =>
      fetch(`${server.url}/v1/executions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ language: 'python', code: '6 * 7', timeoutMs: 300 }),
      })
    const early = await post()
    const body = (await early.json()) as { retryAfterMs: number; value?: unknown }
    expect(execgate.status().adapters.find((adapter) => adapter.name === 'pyodide')?.warm).toBe(false)
    expect(early.status).toBe(200)
    expect(body).toMatchObject({
      status: 'timeout',
      adapter: 'pyodide',
      retryAfterMs: expect.any(Number),
      error: { code: 'EXECGATE_INTERPRETER_WAIT' },
    })
    expect(body.value).toBeUndefined()
    expect(early.headers.get('retry-after')).toBe(String(Math.max(1, Math.ceil(body.retryAfterMs / 1000))))

    await warming
    const late = await post()
    expect(late.status).toBe(200)
    expect(await late.json()).toMatchObject({ status: 'ok', adapter: 'pyodide', value: 42 })
    // A result with no retry hint carries no header.
    expect(late.headers.get('retry-after')).toBeNull()
  }, 120_000)
})
