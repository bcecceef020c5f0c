import { LambdaClient } from '@aws-sdk/client-lambda'
import { mockClient } from 'aws-sdk-client-mock'
import { LambdaAdapter } from '../../adapters/lambda'
import { mapFunctionError, mapLambdaError } from '../../adapters/lambda/map-error'
import { createExecgate, type Execgate } from '../../src'
import { describeAdapterContract, contractContext } from '../contract/adapter-contract'
import { describeHostileCases, loadHostileCases, type HostileExpect } from '../hostile/hostile-runner'
import { DEFAULT_POLICY } from '../../src/policy'
import { ServerlessOffline } from '../../deploy/lambda/offline'

process.env.AWS_ACCESS_KEY_ID = 'AKIDEXECGATETEST'
process.env.AWS_SECRET_ACCESS_KEY = 'execgate-test-secret'
delete process.env.AWS_PROFILE

// The shipped handler under serverless-offline 13, invoked through the real SDK client.
const offline = new ServerlessOffline(30)
beforeAll(() => offline.start(), 90_000)
afterAll(() => offline.stop(), 30_000)
// The emulator starts the function's pyodide on a Python run's first use; on a busy 2-core machine that took past the
// default 10 s slack once (three runs answered timeout in a whole-suite run at load 18), so the wait here is longer
// (still inside the hostile cases' 60 s).
const INVOKE_SLACK_MS = 40_000
const options = () => ({ endpoint: offline.endpoint, region: 'us-east-1', invokeSlackMs: INVOKE_SLACK_MS })

describeAdapterContract('lambda', () => new LambdaAdapter(options()), { timeoutSlackMs: 3000, testTimeoutMs: 120_000 })

/**
 * The function enforces its own deployment's policy as a ceiling (adapters/lambda/function): a request allowing an
 * import that ceiling does not (the corpus cases whose `policy` adds `time`, `os`…) is refused there before anything
 * runs, which is the containment these cases get on Lambda.
 */
function beyondFunctionCeiling(): Record<string, { expect: Partial<HostileExpect>; reason: string }> {
  const ceiling = DEFAULT_POLICY.allowedImports
  const cases = loadHostileCases('python').filter((item) => (item.policy?.allowedImports ?? []).some((name) => !ceiling.includes(name)))
  return Object.fromEntries(
    cases.map((item) => [
      item.id,
      {
        expect: { status: 'policy_violation', statusIn: undefined },
        reason: `the function's own ceiling (imports ${ceiling.join(', ')}) refuses ${item.policy!.allowedImports!.join(', ')}`,
      },
    ]),
  )
}

for (const language of ['python', 'javascript', 'typescript'] as const) {
  let execgate: Execgate | undefined
  // Each language's corpus gets a fresh emulator, as a fresh set of Lambda containers.
  const emulator = new ServerlessOffline(30)
  describeHostileCases({
    adapter: 'lambda',
    language,
    hostFunctions: false,
    target: async () => {
      const endpoint = await emulator.start()
      return (execgate = await createExecgate({
        overrides: {
          execution: { enabled: ['lambda'] },
          adapters: { lambda: { endpoint, invokeSlackMs: INVOKE_SLACK_MS } },
          readiness: { enabled: false },
          log: { level: 'silent' },
        },
      }))
    },
    dispose: async () => {
      await execgate?.dispose()
      await emulator.stop()
    },
    caseTimeoutMs: 60_000,
    // The function's pyodide pool starts on first use, inside the emulator: part of the backend, not a leftover.
    poolProcess: /pyodide\/child\.js/,
    notApplicable: {},
    adjusted: language === 'python' ? beyondFunctionCeiling() : {},
  })
}

describe('lambda adapter against serverless-offline', () => {
  const adapter = () => new LambdaAdapter(options())

  test('ok and error come back as the function produced them, with the inner adapter named', async () => {
    const ok = await adapter().execute({ language: 'python', code: "print('hi')\n6 * 7" }, contractContext())
    expect(ok).toMatchObject({
      status: 'ok',
      adapter: 'lambda',
      stdout: 'hi\n',
      value: 42,
      route: { reason: 'ran on monty inside the Lambda function execgate-dev-execute' },
    })
    const error = await adapter().execute({ language: 'javascript', code: "throw new TypeError('bad input')" }, contractContext())
    expect(error).toMatchObject({ status: 'error', error: { type: 'TypeError', message: expect.stringContaining('bad input') } })
  }, 60_000)

  test('the function enforces the policy it is sent, and refuses one looser than its own', async () => {
    const tight = await adapter().execute({ language: 'javascript', code: 'while (true) {}' }, contractContext({ wallTimeMs: 300 }))
    expect(tight.status).toBe('timeout')
    const loose = await adapter().execute({ language: 'javascript', code: '1' }, contractContext({ memoryMb: 4096 }))
    expect(loose).toMatchObject({ status: 'policy_violation', message: expect.stringContaining('looser than this function allows') })
  }, 60_000)

  test('an unknown function and an emulator that is down are unavailable; routing falls back', async () => {
    const unknown = await new LambdaAdapter({ ...options(), functionName: 'no-such-function' }).execute(
      { language: 'javascript', code: '1' },
      contractContext(),
    )
    expect(unknown).toMatchObject({ status: 'unavailable', error: { type: 'ResourceNotFoundException' } })
    const down = new LambdaAdapter({ endpoint: 'http://127.0.0.1:9', region: 'us-east-1' })
    expect(await down.checkAvailability()).toMatchObject({ status: 'unavailable', reason: expect.stringMatching(/unreachable/) })
    const execgate = await createExecgate({
      overrides: {
        execution: { enabled: ['lambda', 'quickjs'], adapter: 'lambda', fallback: ['quickjs'] },
        adapters: { lambda: { endpoint: 'http://127.0.0.1:9' } },
        readiness: { enabled: false },
        log: { level: 'silent' },
      },
    })
    try {
      const result = await execgate.execute({ language: 'javascript', code: '6 * 7' })
      expect({ status: result.status, adapter: result.adapter, value: result.value, from: result.fallbackFrom?.adapter }).toEqual({
        status: 'ok',
        adapter: 'quickjs',
        value: 42,
        from: 'lambda',
      })
    } finally {
      await execgate.dispose()
    }
  }, 60_000)

  test("the function's own timeout is timeout", async () => {
    // The policy allows 20 s; this deployment of the function has 3 s. (After a timeout serverless-offline keeps
    // answering timeouts for that function, so it gets an emulator of its own.)
    const shortLived = new ServerlessOffline(3)
    try {
      const endpoint = await shortLived.start()
      const result = await new LambdaAdapter({ endpoint }).execute(
        { language: 'javascript', code: 'while (true) {}' },
        contractContext({ wallTimeMs: 20_000 }),
      )
      expect(result).toMatchObject({ status: 'timeout', error: { type: 'FunctionTimeout' } })
    } finally {
      await shortLived.stop()
    }
  }, 90_000)
})

describe('lambda error mapping (unit, aws-sdk-client-mock)', () => {
  test('throttling is unavailable, a payload over the limit is refused before sending', async () => {
    const mock = mockClient(LambdaClient)
    mock.onAnyCommand().rejects(Object.assign(new Error('Rate exceeded'), { name: 'TooManyRequestsException' }))
    const adapter = new LambdaAdapter({ client: new LambdaClient({ region: 'us-east-1' }) })
    expect(await adapter.execute({ language: 'javascript', code: '1' }, contractContext())).toMatchObject({
      status: 'unavailable',
      error: { type: 'TooManyRequestsException' },
    })
    const huge = await adapter.execute({ language: 'javascript', code: `'${'x'.repeat(7 * 1024 * 1024)}'` }, contractContext())
    expect(huge).toMatchObject({ status: 'invalid_request', message: expect.stringContaining('at most 6291456 bytes') })
    expect(mock.calls()).toHaveLength(1) // the oversize one never left
    mock.restore()
    expect(mapFunctionError('{"errorMessage":"2026-11-23T00:00:00.000Z abc Task timed out after 3.00 seconds"}', 5000).status).toBe(
      'timeout',
    )
    expect(mapFunctionError('{"errorMessage":"boom","errorType":"Error"}', 5000)).toMatchObject({
      status: 'internal_error',
      message: expect.stringContaining('boom'),
    })
    expect(mapLambdaError(Object.assign(new Error('x'), { name: 'RequestTooLargeException' }), 'f').status).toBe('invalid_request')
  })
})
