import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'

/**
 * Admission over real HTTP on loopback: QuickJS with two workers (one reserved for interactive runs) and a batch
 * queue of one, so the third batch request at once meets a full queue.
 */

const ACME = 'acme-key-0123456789abcdef'
const GLOBEX = 'globex-key-0123456789abcdef'
const busy = (ms: number) => `const started = Date.now(); while (Date.now() - started < ${ms}) {}; started`

let execgate: Execgate
let server: RunningServer
beforeAll(async () => {
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      adapters: { quickjs: { workers: 2 } },
      admission: {
        interactiveShare: 0.5,
        queue: { interactive: 4, batch: 1 },
        retryAfterMs: 2000,
        tenants: { globex: { maxConcurrent: 1, maxQueued: 0 } },
      },
      // The tests poll /v1/adapters every few ms; the per-tenant rate limit is not under test here (test/server/http).
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`], ratePerMinute: 1_000_000 },
    } as never,
  })
  server = await serve(execgate, { port: 0 }, false)
  await execgate.execute({ language: 'javascript', code: '1' })
}, 60_000)
afterAll(() => server.shutdown())

async function post(key: string, body: unknown) {
  const response = await fetch(`${server.url}/v1/executions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: response.status, retryAfter: response.headers.get('retry-after'), json: (await response.json()) as any }
}

async function quickjsAdmission() {
  const response = await fetch(`${server.url}/v1/adapters`, { headers: { authorization: `Bearer ${ACME}` } })
  const status = (await response.json()) as any
  if (!response.ok) throw new Error(`GET /v1/adapters answered ${response.status}: ${JSON.stringify(status)}`)
  return status.admission.adapters.find((item: { adapter: string }) => item.adapter === 'quickjs')
}

/**
 * Polls until `check` holds. `running` is the request whose run the check waits to see: if it is answered first, the
 * error says with what, so a failure names its cause instead of a bare timeout.
 */
async function until(check: () => Promise<boolean>, running: Promise<{ status: number; json: unknown }>, timeoutMs = 15_000) {
  let answered: { status: number; json: unknown } | undefined
  void running.then(
    (response) => (answered = response),
    () => undefined,
  )
  const end = Date.now() + timeoutMs
  while (!(await check())) {
    if (answered) throw new Error(`the run was answered before it was seen running: ${answered.status} ${JSON.stringify(answered.json)}`)
    if (Date.now() > end) throw new Error(`condition not reached in ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

describe('admission over HTTP', () => {
  test('a full queue answers 429 with Retry-After, /v1/adapters shows slots and queue depth, metrics count it', async () => {
    const running = post(ACME, { language: 'javascript', code: busy(1500), lane: 'batch' })
    await until(async () => (await quickjsAdmission()).inUse.batch === 1, running)
    const queued = post(ACME, { language: 'javascript', code: '2', lane: 'batch' })
    await until(async () => (await quickjsAdmission()).queued.batch === 1, queued)
    expect(await quickjsAdmission()).toMatchObject({
      slots: 2,
      reserved: 1,
      inUse: { interactive: 0, batch: 1 },
      queued: { interactive: 0, batch: 1 },
    })
    const refused = await post(ACME, { language: 'javascript', code: '3', lane: 'batch' })
    expect(refused.status).toBe(429)
    expect(refused.retryAfter).toBe('2')
    expect(refused.json.error).toMatchObject({
      code: 'EXECGATE_QUEUE_FULL',
      message: expect.stringContaining('the batch queue for quickjs is full (1 waiting)'),
    })
    // The reserved slot still takes an interactive request at once.
    const interactive = await post(ACME, { language: 'javascript', code: '6 * 7', lane: 'interactive' })
    expect(interactive.status).toBe(200)
    expect(interactive.json).toMatchObject({ status: 'ok', value: 42, admission: { lane: 'interactive' } })
    expect((await running).json.status).toBe('ok')
    const waited = await queued
    expect(waited.json).toMatchObject({ status: 'ok', value: 2, admission: { lane: 'batch' } })
    expect(waited.json.admission.queuedMs).toBeGreaterThan(100)
    const metrics = await (await fetch(`${server.url}/metrics`)).text()
    expect(metrics).toMatch(/execgate_rejected_requests_total\{reason="queue_full"\} 1/)
    expect(metrics).toMatch(/execgate_admission_wait_seconds_count\{lane="batch"\} [1-9]/)
    expect(metrics).toMatch(/execgate_admission_queue_depth\{adapter="quickjs",lane="batch"\} 0/)
  }, 30_000)

  test("a tenant's quota answers 429 naming the quota", async () => {
    const running = post(GLOBEX, { language: 'javascript', code: busy(1500), lane: 'interactive' })
    await until(async () => (await quickjsAdmission()).inUse.interactive === 1, running)
    const refused = await post(GLOBEX, { language: 'javascript', code: '1', lane: 'interactive' })
    expect(refused.status).toBe(429)
    expect(refused.retryAfter).toBe('2')
    expect(refused.json.error.code).toBe('EXECGATE_QUOTA_EXCEEDED')
    expect(refused.json.error.message).toContain('admission.tenants.globex.maxQueued')
    expect((await running).json.status).toBe('ok')
  }, 30_000)
})
