import { execute, shutdown } from '../../deploy/lambda/handler'

/** The shipped handler, called directly as Lambda would call it. */
describe('lambda function handler', () => {
  afterAll(() => shutdown())

  test('a ping is answered at once', async () => {
    expect(await execute({ ping: true } as never)).toEqual({ pong: true })
  })

  test('runs a request under the policy it is sent, and returns the ExecutionResult', async () => {
    // The first invocation of a container creates execgate and starts its workers, and waiting for a worker counts
    // against the time limit; on a busy machine that start alone can pass 2 s, so the container is warmed first.
    await execute({ request: { language: 'javascript', code: '1' } })
    const result = await execute({ request: { language: 'javascript', code: "console.log('hi'); 6 * 7" }, policy: { wallTimeMs: 2000 } })
    expect(result).toMatchObject({ status: 'ok', adapter: 'quickjs', value: 42, stdout: 'hi\n' })
    const timeout = await execute({ request: { language: 'python', code: 'while True:\n    pass' }, policy: { wallTimeMs: 300 } })
    expect(timeout).toMatchObject({ status: 'timeout' })
  }, 30_000)

  test('a policy looser than the function allows is refused; a malformed event is invalid_request', async () => {
    expect(await execute({ request: { language: 'javascript', code: '1' }, policy: { memoryMb: 1_000_000 } })).toMatchObject({
      status: 'policy_violation',
    })
    expect(await execute({} as never)).toMatchObject({ status: 'invalid_request', message: expect.stringContaining('"request"') })
    expect(await execute({ request: { language: 'cobol', code: 'x' } } as never)).toMatchObject({ status: 'invalid_request' })
  }, 30_000)
})
