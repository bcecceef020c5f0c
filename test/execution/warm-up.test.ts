import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'

/**
 * Start-up readiness: createExecgate() and `/readyz` wait for the first-tier adapters (quickjs, monty, the shell),
 * never for pyodide, which warms behind them. A request that needs pyodide meanwhile waits for it within its own
 * deadline (and its route says so); no other request waits. Only orderings are checked, no clock (the bench's startup
 * section has the timings).
 */
// A time limit far above any warm-up, so a run that waits for one ends `ok` on a busy machine (the outer bound).
const overrides = {
  execution: { enabled: ['quickjs', 'monty', 'pyodide'] },
  readiness: { enabled: false },
  log: { level: 'silent' as const },
  adapters: { pyodide: { poolSize: 1 } },
  security: { defaultPolicy: { wallTimeMs: 60_000, cpuTimeMs: 60_000 } },
}
const warmth = (execgate: Execgate) => Object.fromEntries(execgate.status().adapters.map((adapter) => [adapter.name, adapter.warm]))
const CLASS_PYTHON = 'class Invoice:\n    total = 7\nInvoice().total * 6'

describe('createExecgate() resolves on the first tier; pyodide warms behind', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createExecgate({ overrides })
  }, 120_000)
  afterAll(() => execgate.dispose())

  it('resolves with quickjs and monty warm while pyodide is still warming', () => {
    expect(execgate.status().warmedUp).toBe(true)
    expect(warmth(execgate)).toEqual({ quickjs: true, monty: true, pyodide: false })
  })

  it('while pyodide warms, a JavaScript run does not wait for it, and a Python run that needs it waits, saying so', async () => {
    const order: string[] = []
    const python = execgate.execute({ language: 'python', code: CLASS_PYTHON }).then((result) => (order.push('python'), result))
    const javascript = execgate
      .execute({ language: 'javascript', code: '[3, 4].map((n) => n * n).reduce((a, b) => a + b)' })
      .then((result) => (order.push('javascript'), result))
    const [py, js] = await Promise.all([python, javascript])
    expect(js).toMatchObject({ status: 'ok', adapter: 'quickjs', value: 25 })
    expect(py).toMatchObject({
      status: 'ok',
      adapter: 'pyodide',
      value: 42,
      route: { escalatedFrom: 'monty', reason: expect.stringContaining('pyodide was still warming up: the run waited for it') },
    })
    expect(order).toEqual(['javascript', 'python'])
  }, 120_000)

  it('ready(names) waits for the named adapters; an unknown name is refused', async () => {
    await execgate.ready(['pyodide'])
    expect(warmth(execgate)).toEqual({ quickjs: true, monty: true, pyodide: true })
    await expect(execgate.ready(['no-such-adapter'])).rejects.toMatchObject({ code: 'EXECGATE_ADAPTER_UNKNOWN' })
    // Warm now: the same Python run is routed without the note.
    const result = await execgate.execute({ language: 'python', code: CLASS_PYTHON })
    expect(result).toMatchObject({ status: 'ok', adapter: 'pyodide' })
    expect(result.route?.reason).not.toContain('warming')
  }, 120_000)
})

describe('warm: false', () => {
  it('resolves without starting anything; ready() warms the first tier, once; ready([pyodide]) the rest', async () => {
    const execgate = await createExecgate({ overrides, warm: false })
    try {
      expect(execgate.status().warmedUp).toBe(false)
      expect(warmth(execgate)).toEqual({ quickjs: false, monty: false, pyodide: false })
      const first = execgate.ready()
      expect(execgate.ready()).toBe(first)
      await first
      expect(execgate.status().warmedUp).toBe(true)
      expect(warmth(execgate)).toMatchObject({ quickjs: true, monty: true })
      await execgate.ready(['pyodide'])
      expect(warmth(execgate)).toEqual({ quickjs: true, monty: true, pyodide: true })
    } finally {
      await execgate.dispose()
    }
  }, 120_000)

  it('settles a warm-up cut short by dispose() instead of leaving ready() waiting', async () => {
    const execgate = await createExecgate({ overrides: { ...overrides, execution: { enabled: ['quickjs', 'pyodide'] } }, warm: false })
    const warming = Promise.all([execgate.ready(), execgate.ready(['pyodide'])])
    await execgate.dispose()
    await expect(warming).resolves.toEqual([undefined, undefined])
    expect(warmth(execgate)).toEqual({ quickjs: false, pyodide: false })
  }, 60_000)
})

describe('a run waiting for pyodide to start', () => {
  const cold = { ...overrides, execution: { enabled: ['pyodide'] } }

  it('met while pyodide warms behind the first tier, waits at most its own time limit: timeout, never started', async () => {
    const execgate = await createExecgate({ overrides: cold, warm: false })
    try {
      // Started as `serve` starts it; loading CPython takes seconds on any machine, far past this run's 300 ms.
      const warming = execgate.ready(['pyodide'])
      const result = await execgate.execute({ language: 'python', code: 'print("never")\n6 * 7', timeoutMs: 300 })
      // Answered while pyodide was still loading: bounded by the run's limit, not by the load.
      expect(warmth(execgate)).toEqual({ pyodide: false })
      expect(result).toMatchObject({
        status: 'timeout',
        adapter: 'pyodide',
        stdout: '',
        retryAfterMs: expect.any(Number),
        error: { code: 'EXECGATE_INTERPRETER_WAIT' },
      })
      expect(result.value).toBeUndefined()
      expect(result.message).toMatch(/the run never started: pyodide is still starting .*its \d+ ms time limit passed while it waited/)
      // The wait it gave up did not stop the warm-up: once pyodide is warm, the same limit serves the same run.
      await warming
      expect(await execgate.execute({ language: 'python', code: '6 * 7', timeoutMs: 1000 })).toMatchObject({ status: 'ok', value: 42 })
    } finally {
      await execgate.dispose()
    }
  }, 120_000)

  it('a run that starts pyodide itself (a one-shot, as the CLI runs) waits for the load whatever its limit', async () => {
    const execgate = await createExecgate({ overrides: cold, warm: false })
    try {
      const result = await execgate.execute({ language: 'python', code: '6 * 7', timeoutMs: 1000 })
      expect(result).toMatchObject({ status: 'ok', adapter: 'pyodide', value: 42 })
    } finally {
      await execgate.dispose()
    }
  }, 120_000)

  it("a caller's cancel ends the wait at once: cancelled, never run", async () => {
    const execgate = await createExecgate({ overrides: cold, warm: false })
    try {
      const controller = new AbortController()
      const running = execgate.execute({ language: 'python', code: '6 * 7' }, { signal: controller.signal })
      setTimeout(() => controller.abort(), 100)
      const result = await running
      expect(result).toMatchObject({ status: 'cancelled', adapter: 'pyodide' })
      expect(result.value).toBeUndefined()
    } finally {
      await execgate.dispose()
    }
  }, 120_000)
})

describe('a one-shot run (the CLI: warm: false)', () => {
  it('starts only the adapter its route needs: a JavaScript run starts neither monty nor pyodide', async () => {
    const execgate = await createExecgate({ overrides, warm: false })
    try {
      const result = await execgate.execute({ language: 'javascript', code: '"only quickjs"' })
      expect(result).toMatchObject({ status: 'ok', adapter: 'quickjs' })
      expect(warmth(execgate)).toEqual({ quickjs: true, monty: false, pyodide: false })
    } finally {
      await execgate.dispose()
    }
  }, 60_000)
})

describe('execgate serve while warming', () => {
  let execgate: Execgate
  let server: RunningServer
  afterAll(() => server?.shutdown())

  it('is live at once; /readyz answers 200 once the first tier is warm, before pyodide is', async () => {
    execgate = await createExecgate({ overrides, warm: false })
    server = await serve(execgate, { port: 0 }, false)
    const [health, early] = await Promise.all([fetch(`${server.url}/healthz`), fetch(`${server.url}/readyz`)])
    expect(health.status).toBe(200)
    expect({ status: early.status, body: await early.json() }).toEqual({
      status: 503,
      body: { ready: false, warming: true, available: [] },
    })
    await execgate.ready()
    const late = await fetch(`${server.url}/readyz`)
    const pyodideWarmAtReady = warmth(execgate).pyodide
    expect({ status: late.status, body: await late.json() }).toEqual({
      status: 200,
      body: { ready: true, available: expect.arrayContaining(['quickjs', 'monty']) },
    })
    expect(pyodideWarmAtReady).toBe(false)
  }, 120_000)
})
