import { createExecgate, type Execgate } from '../../src'

/** Sessions through the service on quickjs: state kept between calls, TTL, the cap, close, and isolation. */
let execgate: Execgate
beforeAll(async () => {
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      sessions: { ttlSeconds: 1, maxSessions: 3 },
      security: { defaultPolicy: { filesystem: 'sandboxed' } },
    },
  })
})
afterAll(() => execgate.dispose())

const run = (sessionId: string, code: string) => execgate.execute({ language: 'javascript', code, sessionId })

test('top-level values and functions carry over; a failed call leaves the state as it was', async () => {
  expect(await run('cart', 'const prices = [12.5, 7.25]; function total(xs) { return xs.reduce((a, b) => a + b, 0) }; total(prices)')).toMatchObject({ status: 'ok', value: 19.75 })
  expect(await run('cart', 'prices.push(3); const taxed = await Promise.resolve(total(prices) * 1.08); taxed.toFixed(2)')).toMatchObject({ status: 'ok', value: '24.57' })
  expect(await run('cart', "prices.push(1000); throw new Error('changed my mind')")).toMatchObject({ status: 'error' })
  expect(await run('cart', '[prices.length, taxed.toFixed(2)]')).toMatchObject({ status: 'ok', value: [3, '24.57'] })
  await execgate.closeSession('cart')
})

test("one session's state and workspace are never visible to another", async () => {
  await run('alice', "const secret = 'alice-only'; await write_file('note.txt', secret)")
  expect(await run('bob', "[typeof secret, await list_files()]")).toMatchObject({ status: 'ok', value: ['undefined', []] })
  expect(await run('alice', "[secret, await read_file('note.txt')]")).toMatchObject({ status: 'ok', value: ['alice-only', 'alice-only'] })
  await execgate.closeSession('alice')
  await execgate.closeSession('bob')
})

test('closeSession drops the state and the workspace', async () => {
  await run('closing', "const kept = 1; await write_file('a.txt', 'x')")
  expect(await execgate.closeSession('closing')).toBe(true)
  expect(await run('closing', "[typeof kept, await list_files()]")).toMatchObject({ value: ['undefined', []] })
  expect(await execgate.closeSession('closing')).toBe(true)
  expect(await execgate.closeSession('never-opened')).toBe(false)
})

test('the session cap answers unavailable, naming the limit', async () => {
  for (const id of ['s1', 's2', 's3']) expect((await run(id, 'const x = 1')).status).toBe('ok')
  const fourth = await run('s4', 'const x = 1')
  expect(fourth).toMatchObject({ status: 'unavailable', message: expect.stringContaining('already holds its limit of 3 sessions') })
  for (const id of ['s1', 's2', 's3']) await execgate.closeSession(id)
})

test('an expired session is reported once, then starts afresh', async () => {
  await run('idle', 'const kept = 42')
  await new Promise((resolve) => setTimeout(resolve, 1100))
  const expired = await run('idle', 'kept')
  expect(expired).toMatchObject({ status: 'invalid_request', message: expect.stringContaining('no session "idle" on quickjs: it expired after 1 s idle') })
  expect(await run('idle', 'typeof kept')).toMatchObject({ status: 'ok', value: 'undefined' })
})

test('state that cannot be restored is skipped alone: methods, classes and non-JSON values', async () => {
  await run('odd', 'const o = { m() { return 1 } }; class K {}; const big = 10n; const ok = { a: [1, 2] }; const fn = function named(x) { return x + 1 }')
  expect(await run('odd', '[typeof o, typeof K, typeof big, ok.a.length, fn(1)]')).toMatchObject({ status: 'ok', value: ['object', 'function', 'undefined', 2, 2] })
  await execgate.closeSession('odd')
})

describe('pyodide sessions', () => {
  let python: Execgate
  beforeAll(async () => {
    python = await createExecgate({
      overrides: { execution: { enabled: ['pyodide'] }, readiness: { enabled: false }, log: { level: 'silent' }, adapters: { pyodide: { poolSize: 1 } }, sessions: { ttlSeconds: 60, maxSessions: 2 } },
    })
  }, 60_000)
  afterAll(() => python.dispose())
  const py = (sessionId: string, code: string) => python.execute({ language: 'python', code, sessionId, timeoutMs: 5000 })

  test('globals that pickle carry over; functions and modules do not; a failure keeps the old state', async () => {
    expect(await py('ledger', 'import math\nrows = [12.5, 7.25]\nfactor = 1.08\ndef helper(): return 1\nround(sum(rows) * factor, 2)')).toMatchObject({ status: 'ok', value: 21.33 })
    expect(await py('ledger', "rows.append(3.0)\nsummary = {'n': len(rows)}\n[round(sum(rows) * factor, 2), 'math' in globals(), 'helper' in globals()]")).toMatchObject({ status: 'ok', value: [24.57, false, false] })
    expect(await py('ledger', "rows.append(1000)\nraise ValueError('undo')")).toMatchObject({ status: 'error' })
    expect(await py('ledger', "[len(rows), summary['n']]")).toMatchObject({ status: 'ok', value: [3, 3] })
    expect(await py('someone-else', "'rows' in globals()")).toMatchObject({ status: 'ok', value: false })
    expect(await python.closeSession('ledger')).toBe(true)
    expect(await py('ledger', "'rows' in globals()")).toMatchObject({ value: false })
  }, 60_000)

  test('python session requests route to pyodide, past monty', async () => {
    const both = await createExecgate({ overrides: { execution: { enabled: ['monty', 'pyodide'] }, readiness: { enabled: false }, log: { level: 'silent' }, adapters: { pyodide: { poolSize: 1 } } } })
    try {
      const result = await both.execute({ language: 'python', code: 'x = 2\nx * 21', sessionId: 'routed' })
      expect(result).toMatchObject({ status: 'ok', adapter: 'pyodide', value: 42 })
    } finally {
      await both.dispose()
    }
  }, 60_000)
})
