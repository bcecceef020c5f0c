import { performance } from 'node:perf_hooks'
import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'

/**
 * No cold start on the request path: once createExecgate() resolves, the embedded adapters are warm and the first
 * run on each takes about as long as any other. No clock bound here (the machine's CPU is shared): each first run is
 * compared with the same first run on an execgate made with `warm: false`, which pays the cold start (quickjs ~1.8 s,
 * pyodide ~1.6 s or more, against tens of ms warm). The figures are `npm run bench startup` rows.
 */
const overrides = { execution: { enabled: ['quickjs', 'monty', 'pyodide'] }, readiness: { enabled: false }, log: { level: 'silent' as const }, adapters: { pyodide: { poolSize: 1 } } }

const FIRST_RUNS = {
  javascript: { request: { language: 'javascript' as const, code: '[3, 4].map((n) => n * n).reduce((a, b) => a + b)' }, expected: { status: 'ok', adapter: 'quickjs', value: 25 } },
  // A class: monty cannot run it, pyodide can.
  python: { request: { language: 'python' as const, code: 'class Invoice:\n    total = 7\nInvoice().total * 6' }, expected: { status: 'ok', adapter: 'pyodide', value: 42, route: { escalatedFrom: 'monty' } } },
}

/** How long the first run took; `checked`: its answer must be the right one (a cold one may meet its time limit). */
async function timedFirstRun(execgate: Execgate, which: keyof typeof FIRST_RUNS, checked = true): Promise<number> {
  const started = performance.now()
  const result = await execgate.execute(FIRST_RUNS[which].request)
  const elapsed = performance.now() - started
  if (checked) expect(result).toMatchObject(FIRST_RUNS[which].expected)
  return elapsed
}

describe('createExecgate() warms the embedded adapters', () => {
  let execgate: Execgate
  const coldMs: Record<string, number> = {}
  beforeAll(async () => {
    // The cold first runs, measured before the warm execgate exists so the two never share the CPU.
    for (const which of ['javascript', 'python'] as const) {
      const cold = await createExecgate({ overrides, warm: false })
      try {
        coldMs[which] = await timedFirstRun(cold, which, false)
      } finally {
        await cold.dispose()
      }
    }
    execgate = await createExecgate({ overrides })
  }, 240_000)
  afterAll(() => execgate.dispose())

  it('reports every embedded adapter warm when it resolves', () => {
    const status = execgate.status()
    expect(status.warmedUp).toBe(true)
    expect(Object.fromEntries(status.adapters.map((adapter) => [adapter.name, adapter.warm]))).toEqual({ quickjs: true, monty: true, pyodide: true })
  })

  it('answers the first JavaScript run without a cold start (sooner than a cold execgate does)', async () => {
    expect(await timedFirstRun(execgate, 'javascript')).toBeLessThan(coldMs.javascript!)
  })

  it('answers the first escalated Python run (a class: monty cannot, pyodide can) without a cold start', async () => {
    expect(await timedFirstRun(execgate, 'python')).toBeLessThan(coldMs.python!)
  })
})

describe('warm: false', () => {
  it('resolves without starting anything; ready() warms, once', async () => {
    const execgate = await createExecgate({ overrides, warm: false })
    try {
      const cold = execgate.status()
      expect(cold.warmedUp).toBe(false)
      expect(cold.adapters.map((adapter) => adapter.warm)).toEqual([false, false, false])
      const first = execgate.ready()
      expect(execgate.ready()).toBe(first)
      await first
      const warm = execgate.status()
      expect(warm.warmedUp).toBe(true)
      expect(warm.adapters.map((adapter) => adapter.warm)).toEqual([true, true, true])
    } finally {
      await execgate.dispose()
    }
  }, 120_000)

  it('settles a warm-up cut short by dispose() instead of leaving ready() waiting', async () => {
    const execgate = await createExecgate({ overrides: { ...overrides, execution: { enabled: ['quickjs', 'pyodide'] } }, warm: false })
    const warming = execgate.ready()
    await execgate.dispose()
    await expect(warming).resolves.toBeUndefined()
    expect(execgate.status().adapters.map((adapter) => adapter.warm)).toEqual([false, false])
  }, 60_000)
})

describe('a one-shot run (the CLI: warm: false)', () => {
  it('starts only the adapter its route needs: a JavaScript run starts neither monty nor pyodide', async () => {
    const execgate = await createExecgate({ overrides, warm: false })
    try {
      const result = await execgate.execute({ language: 'javascript', code: '"only quickjs"' })
      expect(result).toMatchObject({ status: 'ok', adapter: 'quickjs' })
      expect(Object.fromEntries(execgate.status().adapters.map((adapter) => [adapter.name, adapter.warm]))).toEqual({ quickjs: true, monty: false, pyodide: false })
    } finally {
      await execgate.dispose()
    }
  }, 60_000)
})

describe('execgate serve while warming', () => {
  let execgate: Execgate
  let server: RunningServer
  afterAll(() => server?.shutdown())

  it('is live at once, and ready on /readyz only once the adapters are warm', async () => {
    execgate = await createExecgate({ overrides: { ...overrides, execution: { enabled: ['quickjs', 'pyodide'] } }, warm: false })
    server = await serve(execgate, { port: 0 }, false)
    const [health, early] = await Promise.all([fetch(`${server.url}/healthz`), fetch(`${server.url}/readyz`)])
    expect(health.status).toBe(200)
    expect({ status: early.status, body: await early.json() }).toEqual({ status: 503, body: { ready: false, warming: true, available: [] } })
    await execgate.ready()
    const late = await fetch(`${server.url}/readyz`)
    expect({ status: late.status, body: await late.json() }).toEqual({ status: 200, body: { ready: true, available: ['quickjs', 'pyodide'] } })
  }, 120_000)
})
