import { createExecgate, type Execgate } from '../../src'

describe('Python routing: monty first, escalating by parsing, never by running twice', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createExecgate({ env: { EXECGATE_LOG_LEVEL: 'silent', EXECGATE_EXECUTION_ENABLED: 'placeholder,quickjs,monty' } })
  })
  afterAll(() => execgate.dispose())

  test('code monty can run goes to monty', async () => {
    const result = await execgate.execute({ language: 'python', code: 'sum([1, 2, 3])' })
    expect(result).toMatchObject({ status: 'ok', adapter: 'monty', value: 6 })
  })

  test('code monty cannot run moves on to the next capable adapter, saying why', async () => {
    const result = await execgate.execute({ language: 'python', code: 'class Invoice:\n    pass\nInvoice()' })
    expect(result.adapter).not.toBe('monty')
    expect(result.route).toMatchObject({ escalatedFrom: 'monty', reason: expect.stringContaining('class definitions') })
  })

  test('a pinned adapter is never escalated from', async () => {
    const result = await execgate.execute({ language: 'python', code: 'class A:\n    pass', adapter: 'monty' })
    expect(result).toMatchObject({ status: 'error', adapter: 'monty' })
    expect(result.error?.message).toMatch(/not supported by monty/)
  })
})
