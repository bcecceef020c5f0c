import { createExecgate, type Execgate } from '../../src'

describe('Python routing: monty first, escalating by parsing, never by running twice', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createExecgate({
      env: {
        EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR,
        EXECGATE_LOG_LEVEL: 'silent',
        EXECGATE_EXECUTION_ENABLED: 'placeholder,quickjs,monty,pyodide',
        EXECGATE_SECURITY_DEFAULT_POLICY_ALLOWED_IMPORTS: 'math,json,datetime,statistics',
      },
    })
    // Warm first: a run that meets pyodide still warming waits only its own time limit (test/execution/warm-up.test.ts).
    await execgate.ready(['pyodide'])
  }, 120_000)
  afterAll(() => execgate.dispose())

  test('code monty can run goes to monty', async () => {
    const result = await execgate.execute({ language: 'python', code: 'sum([1, 2, 3])' })
    expect(result).toMatchObject({ status: 'ok', adapter: 'monty', value: 6 })
  })

  test('code monty cannot run is escalated to pyodide before running, saying why', async () => {
    const result = await execgate.execute({
      language: 'python',
      code: 'class Invoice:\n    total = 7\nInvoice().total * 6',
      timeoutMs: 5000,
    })
    expect(result).toMatchObject({ status: 'ok', adapter: 'pyodide', value: 42 })
    expect(result.route).toMatchObject({ escalatedFrom: 'monty', reason: expect.stringContaining('class definitions') })
  })

  test('a module monty lacks escalates too', async () => {
    const result = await execgate.execute({ language: 'python', code: 'import statistics\nstatistics.mean([1, 2, 3])' })
    expect(result).toMatchObject({
      status: 'ok',
      adapter: 'pyodide',
      value: 2,
      route: { escalatedFrom: 'monty', reason: expect.stringContaining('statistics') },
    })
    const stays = await execgate.execute({ language: 'python', code: 'from json import dumps\ndumps([1])' })
    expect(stays).toMatchObject({ status: 'ok', adapter: 'monty', value: '[1]' })
  })

  test('a pinned adapter is never escalated from', async () => {
    const result = await execgate.execute({ language: 'python', code: 'class A:\n    pass', adapter: 'monty' })
    expect(result).toMatchObject({ status: 'error', adapter: 'monty' })
    expect(result.error?.message).toMatch(/not supported by monty/)
  })
})
