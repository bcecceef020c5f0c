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
  expect(
    await run('cart', 'const prices = [12.5, 7.25]; function total(xs) { return xs.reduce((a, b) => a + b, 0) }; total(prices)'),
  ).toMatchObject({ status: 'ok', value: 19.75 })
  expect(await run('cart', 'prices.push(3); const taxed = await Promise.resolve(total(prices) * 1.08); taxed.toFixed(2)')).toMatchObject({
    status: 'ok',
    value: '24.57',
  })
  expect(await run('cart', "prices.push(1000); throw new Error('changed my mind')")).toMatchObject({ status: 'error' })
  expect(await run('cart', '[prices.length, taxed.toFixed(2)]')).toMatchObject({ status: 'ok', value: [3, '24.57'] })
  await execgate.closeSession('cart')
})

test('globals set by assignment carry over: x = …, globalThis.x = …, globalThis["x"] = …, this.x = …', async () => {
  expect(await run('globals', "rate = 1.2; globalThis.fee = 3; globalThis['cap'] = 100; this.unit = 'EUR'; 0")).toMatchObject({
    status: 'ok',
  })
  expect(await run('globals', '[rate, fee, cap, unit]')).toMatchObject({ status: 'ok', value: [1.2, 3, 100, 'EUR'] })
  await execgate.closeSession('globals')
})

test("one session's state and workspace are never visible to another", async () => {
  await run('alice', "const secret = 'alice-only'; await write_file('note.txt', secret)")
  expect(await run('bob', '[typeof secret, await list_files()]')).toMatchObject({ status: 'ok', value: ['undefined', []] })
  expect(await run('alice', "[secret, await read_file('note.txt')]")).toMatchObject({ status: 'ok', value: ['alice-only', 'alice-only'] })
  await execgate.closeSession('alice')
  await execgate.closeSession('bob')
})

test('closeSession drops the state and the workspace', async () => {
  await run('closing', "const kept = 1; await write_file('a.txt', 'x')")
  expect(await execgate.closeSession('closing')).toBe(true)
  expect(await run('closing', '[typeof kept, await list_files()]')).toMatchObject({ value: ['undefined', []] })
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
  expect(expired).toMatchObject({
    status: 'invalid_request',
    message: expect.stringContaining('no session "idle" on quickjs: it expired after 1 s idle'),
  })
  expect(await run('idle', 'typeof kept')).toMatchObject({ status: 'ok', value: 'undefined' })
})

test('state that cannot be restored is skipped alone: methods, classes and non-JSON values', async () => {
  await run(
    'odd',
    'const o = { m() { return 1 } }; class K {}; const big = 10n; const ok = { a: [1, 2] }; const fn = function named(x) { return x + 1 }',
  )
  expect(await run('odd', '[typeof o, typeof K, typeof big, ok.a.length, fn(1)]')).toMatchObject({
    status: 'ok',
    value: ['object', 'function', 'undefined', 2, 2],
  })
  await execgate.closeSession('odd')
})

test('state past 1 MiB is not kept, and says so; the previous state stays', async () => {
  await run('heavy', 'const small = 1')
  const big = await run('heavy', "const blob = 'x'.repeat(2 * 1024 * 1024); blob.length")
  expect(big).toMatchObject({
    status: 'ok',
    value: 2 * 1024 * 1024,
    message: expect.stringContaining('was not kept; the previous state stays'),
  })
  expect(await run('heavy', '[typeof blob, small]')).toMatchObject({ status: 'ok', value: ['undefined', 1] })
  await execgate.closeSession('heavy')
})

describe('pyodide sessions', () => {
  let python: Execgate
  beforeAll(async () => {
    python = await createExecgate({
      overrides: {
        execution: { enabled: ['pyodide'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        adapters: { pyodide: { poolSize: 1 } },
        sessions: { ttlSeconds: 60, maxSessions: 2 },
      },
    })
    // Warm first: a run that meets pyodide still warming waits only its own time limit (test/execution/warm-up.test.ts).
    await python.ready(['pyodide'])
  }, 120_000)
  afterAll(() => python.dispose())
  const py = (sessionId: string, code: string) => python.execute({ language: 'python', code, sessionId, timeoutMs: 5000 })

  test('globals that pickle carry over; functions and modules do not; a failure keeps the old state', async () => {
    expect(
      await py('ledger', 'import math\nrows = [12.5, 7.25]\nfactor = 1.08\ndef helper(): return 1\nround(sum(rows) * factor, 2)'),
    ).toMatchObject({ status: 'ok', value: 21.33 })
    expect(
      await py(
        'ledger',
        "rows.append(3.0)\nsummary = {'n': len(rows)}\n[round(sum(rows) * factor, 2), 'math' in globals(), 'helper' in globals()]",
      ),
    ).toMatchObject({ status: 'ok', value: [24.57, false, false] })
    expect(await py('ledger', "rows.append(1000)\nraise ValueError('undo')")).toMatchObject({ status: 'error' })
    expect(await py('ledger', "[len(rows), summary['n']]")).toMatchObject({ status: 'ok', value: [3, 3] })
    expect(await py('someone-else', "'rows' in globals()")).toMatchObject({ status: 'ok', value: false })
    expect(await python.closeSession('ledger')).toBe(true)
    expect(await py('ledger', "'rows' in globals()")).toMatchObject({ value: false })
  }, 60_000)

  test('state past 1 MiB is not kept, and says so; the previous state stays', async () => {
    for (const id of ['ledger', 'someone-else']) await python.closeSession(id)
    await py('heavy', 'small = 1')
    const big = await py('heavy', "blob = 'x' * (2 * 1024 * 1024)\nlen(blob)")
    expect(big).toMatchObject({
      status: 'ok',
      value: 2 * 1024 * 1024,
      message: expect.stringContaining('was not kept; the previous state stays'),
    })
    expect(await py('heavy', "['blob' in globals(), small]")).toMatchObject({ status: 'ok', value: [false, 1] })
    await python.closeSession('heavy')
  }, 60_000)

  test('python sessions stay on monty for what it runs, and go to pyodide for what it cannot: classes, host functions', async () => {
    const both = await createExecgate({
      overrides: {
        execution: { enabled: ['monty', 'pyodide'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        adapters: { pyodide: { poolSize: 1 } },
        security: { defaultPolicy: { filesystem: 'sandboxed' } },
      },
    })
    try {
      // Warm first: a run that meets pyodide still warming waits only its own time limit (test/execution/warm-up.test.ts).
      await both.ready(['pyodide'])
      expect(await both.execute({ language: 'python', code: 'x = 2\nx * 21', sessionId: 'routed' })).toMatchObject({
        status: 'ok',
        adapter: 'monty',
        value: 42,
      })
      const withClass = await both.execute({ language: 'python', code: 'class K:\n    n = 2\nK.n * 21', sessionId: 'routed-class' })
      expect(withClass).toMatchObject({ status: 'ok', adapter: 'pyodide', value: 42, route: { escalatedFrom: 'monty' } })
      const withHost = await both.execute({
        language: 'python',
        code: "write_file('a.txt', 'x')\nlen(read_file('a.txt'))",
        sessionId: 'routed-host',
      })
      expect(withHost).toMatchObject({
        status: 'ok',
        adapter: 'pyodide',
        value: 1,
        route: { reason: expect.stringContaining('cannot call host functions') },
      })
      // Pinned to monty anyway: a clear refusal, not a NameError.
      const pinned = await both.execute({ language: 'python', adapter: 'monty', code: "read_file('a.txt')", sessionId: 'routed-host' })
      expect(pinned).toMatchObject({ status: 'invalid_request', message: expect.stringContaining('cannot call host functions') })
    } finally {
      await both.dispose()
    }
  }, 60_000)
})

describe('monty sessions (its REPL, in a child process)', () => {
  let gate: Execgate
  beforeAll(async () => {
    gate = await createExecgate({
      overrides: {
        execution: { enabled: ['monty'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        sessions: { ttlSeconds: 60, maxSessions: 8 },
      },
    })
  })
  afterAll(() => gate.dispose())
  const py = (sessionId: string, code: string, extra: object = {}) => gate.execute({ language: 'python', code, sessionId, ...extra })

  test('state carries over; output stays with its own call, even without a newline; a failure keeps the old state', async () => {
    expect(await py('m1', "rows = [12.5, 7.25]\nprint('first', end='')\nround(sum(rows) * 1.08, 2)")).toMatchObject({
      status: 'ok',
      adapter: 'monty',
      value: 21.33,
      stdout: 'first',
    })
    expect(await py('m1', "rows.append(3.0)\nprint('second')\nlen(rows)")).toMatchObject({ status: 'ok', value: 3, stdout: 'second\n' })
    expect(await py('m1', 'rows.append(1000)\n1 / 0')).toMatchObject({ status: 'error', error: { type: 'ZeroDivisionError' } })
    expect(await py('m1', 'len(rows)')).toMatchObject({ status: 'ok', value: 3, stdout: '' })
    expect(await py('m2', 'rows')).toMatchObject({ status: 'error', error: { type: 'NameError' } })
    expect(await gate.closeSession('m1')).toBe(true)
    expect(await py('m1', 'rows')).toMatchObject({ status: 'error', error: { type: 'NameError' } })
  })

  test('a loop past the time limit ends timeout; the session and the next call still work', async () => {
    expect(await py('m3', 'kept = 7')).toMatchObject({ status: 'ok' })
    const spun = await py('m3', 'while True:\n    pass', { timeoutMs: 300 })
    expect(spun.status).toBe('timeout')
    expect(await py('m3', 'kept * 6')).toMatchObject({ status: 'ok', value: 42 })
  })

  test('output past the cap ends output_limit; memory past the limit ends memory_limit', async () => {
    const flood = await py('m4', "for i in range(100000):\n    print('flood line', i)", { policy: { outputBytes: 1024 } })
    expect(flood.status).toBe('output_limit')
    expect(flood).toMatchObject({ truncated: true, stdout: expect.stringMatching(/^flood line 0\n[\s\S]*bytes omitted/) })
    expect(Buffer.byteLength(flood.stdout)).toBeLessThan(1024 + 200) // the cap, plus the omission notice
    expect(await py('m5', 'x = [0] * (10 ** 9)', { policy: { memoryMb: 32 } })).toMatchObject({ status: 'memory_limit' })
    expect(await py('m4', '6 * 7')).toMatchObject({ status: 'ok', value: 42 })
  })

  test('state past 1 MiB is not kept, and says so; the previous state stays', async () => {
    await py('m6', 'small = 1')
    const big = await py('m6', "blob = 'x' * (2 * 1024 * 1024)\nlen(blob)")
    expect(big).toMatchObject({
      status: 'ok',
      value: 2 * 1024 * 1024,
      message: expect.stringContaining('was not kept; the previous state stays'),
    })
    expect(await py('m6', 'small')).toMatchObject({ status: 'ok', value: 1 })
    expect(await py('m6', 'blob')).toMatchObject({ status: 'error', error: { type: 'NameError' } })
  })
})
