import { createExecgate, type Execgate } from '../../src'
import type { HostFunctionDefinition } from '../../src/workspace'

/**
 * Runtime net under the scan (src/execution/cpython-rerun.ts): code monty's scan accepts but monty rejects at run
 * time (docs/adapters/monty.md, kind `rerun`) runs again on pyodide and answers like CPython — unless the first run
 * could have had an effect (a session, a host call, output already streamed) or monty was pinned.
 */
describe('a monty error is run again on pyodide when that is safe', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createExecgate({
      env: {
        EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR,
        EXECGATE_LOG_LEVEL: 'silent',
        EXECGATE_EXECUTION_ENABLED: 'placeholder,quickjs,monty,pyodide',
        EXECGATE_SECURITY_DEFAULT_POLICY_WALL_TIME_MS: '60000',
      },
    })
    // pyodide's first start (~4 s, longer on a shared machine) is not what these tests measure.
    await execgate.execute({ language: 'python', code: 'class Warm:\n    pass', timeoutMs: 60_000 })
  }, 90_000)
  afterAll(() => execgate.dispose())

  test('int + bool (TypeError on monty) answers 2, from pyodide, saying so', async () => {
    const result = await execgate.execute({
      language: 'python',
      code: 'flags = [True, False, True]\ncount = 0\nfor f in flags:\n    count = count + f\ncount',
      timeoutMs: 20_000,
    })
    expect(result).toMatchObject({ status: 'ok', value: 2, adapter: 'pyodide' })
    expect(result.route).toMatchObject({
      rerunFrom: 'monty',
      reason: expect.stringMatching(/^rerun on pyodide after monty answered TypeError: unsupported operand/),
    })
    expect(result.fallbackFrom).toMatchObject({ adapter: 'monty', reason: expect.stringContaining('TypeError') })
  })

  test('extended-slice assignment prints what CPython prints, once', async () => {
    const result = await execgate.execute({
      language: 'python',
      code: 'print("before")\na = list(range(6))\na[::2] = [10, 20, 30]\nprint(a)',
      timeoutMs: 20_000,
    })
    expect(result).toMatchObject({
      status: 'ok',
      adapter: 'pyodide',
      stdout: 'before\n[10, 1, 20, 3, 30, 5]\n',
      route: { rerunFrom: 'monty' },
    })
  })

  test("the code's own error is CPython's error", async () => {
    const result = await execgate.execute({ language: 'python', code: 'total = 10\ntotal / 0', timeoutMs: 20_000 })
    expect(result).toMatchObject({
      status: 'error',
      adapter: 'pyodide',
      error: { type: 'ZeroDivisionError' },
      route: { rerunFrom: 'monty' },
    })
  })

  test('code monty runs stays on monty', async () => {
    const result = await execgate.execute({ language: 'python', code: 'sum([1, 2, 3])' })
    expect(result).toMatchObject({ status: 'ok', adapter: 'monty', value: 6 })
    expect(result.route?.rerunFrom).toBeUndefined()
  })

  test('a request that pins monty gets monty’s answer', async () => {
    const result = await execgate.execute({ language: 'python', code: '1 + True', adapter: 'monty' })
    expect(result).toMatchObject({ status: 'error', adapter: 'monty', error: { type: 'TypeError' } })
    expect(result.route?.rerunFrom).toBeUndefined()
  })

  test('a session run is not rerun (its state would be half-updated)', async () => {
    const result = await execgate.execute({ language: 'python', code: 'x = 1\nx + True', sessionId: 'rerun-session' })
    expect(result).toMatchObject({ status: 'error', adapter: 'monty' })
    expect(result.route?.rerunFrom).toBeUndefined()
    await execgate.closeSession?.('rerun-session')
  })

  test('a run that made a host call is not rerun: the call happened once', async () => {
    let calls = 0
    const record: HostFunctionDefinition = {
      name: 'record_sale',
      description: 'record_sale(amount) -> None',
      parameters: { type: 'array', items: [{ type: 'number' }], minItems: 1, maxItems: 1 },
      handler: () => {
        calls++
        return null
      },
    }
    const result = await execgate.execute({ language: 'python', code: 'record_sale(5)\n1 + True' }, { functions: [record] })
    expect(result).toMatchObject({ status: 'error', adapter: 'monty', hostCalls: [{ name: 'record_sale', ok: true }] })
    expect(calls).toBe(1)
  })

  test('output already streamed to the caller is not streamed twice', async () => {
    const chunks: string[] = []
    const result = await execgate.execute(
      { language: 'python', code: 'print("once")\n1 + True' },
      { onOutput: (_stream, chunk) => chunks.push(chunk) },
    )
    expect(result).toMatchObject({ status: 'error', adapter: 'monty', stdout: 'once\n' })
    expect(chunks.join('')).toBe('once\n')
  })
})
