import { BedrockAgentCoreClient } from '@aws-sdk/client-bedrock-agentcore'
import { mockClient } from 'aws-sdk-client-mock'
import { BedrockAdapter } from '../../adapters/bedrock'
import { mapAwsError } from '../../adapters/bedrock/map-error'
import { ProcessAdapter } from '../../adapters/process'
import { QuickJsAdapter } from '../../adapters/quickjs'
import { createExecgate } from '../../src'
import { describeAdapterContract, contractContext } from '../contract/adapter-contract'
import { describeHostileCases, ownExecgate } from '../hostile/hostile-runner'
import { FakeAgentCore } from '../fakes/agentcore-server'

// The real SDK client, talking over HTTP to a local server that speaks AgentCore's wire protocol.
process.env.AWS_ACCESS_KEY_ID = 'AKIDEXECGATETEST'
process.env.AWS_SECRET_ACCESS_KEY = 'execgate-test-secret'
delete process.env.AWS_PROFILE

const runners = { python: new ProcessAdapter(), javascript: new QuickJsAdapter() }
const fake = new FakeAgentCore(runners)
let endpoint = ''
beforeAll(async () => {
  endpoint = await fake.listen()
})
afterAll(async () => {
  await fake.close()
  await Promise.all([runners.python.dispose(), runners.javascript.dispose()])
})
const adapterOptions = () => ({ endpoint, region: 'us-east-1' })

describeAdapterContract('bedrock', () => new BedrockAdapter(adapterOptions()), {
  timeoutSlackMs: 3000,
  testTimeoutMs: 120_000,
  // AgentCore keeps a session's interpreter; the local AgentCore server runs each call afresh. Session reuse and
  // closing are checked below ("calls with one sessionId reuse one AgentCore session").
  sessionStateUncheckable: 'the local AgentCore server keeps no interpreter state between calls',
})

for (const language of ['python', 'javascript', 'typescript'] as const) {
  describeHostileCases({
    adapter: 'bedrock',
    language,
    hostFunctions: false,
    ...ownExecgate('bedrock', () => ({ adapters: { bedrock: adapterOptions() } })),
    caseTimeoutMs: 60_000,
    notApplicable: {},
    adjusted:
      language !== 'python'
        ? {
            'js-mem-map-objects': {
              expect: { statusIn: ['memory_limit', 'timeout', 'error'] },
              reason:
                'the stand-in runs JavaScript on QuickJS, which throws null when its heap is too full to ' +
                'build the error, and the wrapper reports that as an error (seen in CI on typescript, once ' +
                'on javascript at load 25); contained: hostSurvives and nextRunOk still checked',
            },
          }
        : {},
  })
}

describe('bedrock adapter against the local AgentCore server', () => {
  let adapter: BedrockAdapter
  beforeAll(() => {
    adapter = new BedrockAdapter(adapterOptions())
  })
  afterAll(() => adapter.dispose())

  test('a one-off run starts a session, invokes executeCode and stops the session', async () => {
    const before = fake.calls.length
    const result = await adapter.execute({ language: 'python', code: "print('hi')\n6 * 7" }, contractContext())
    expect(result).toMatchObject({ status: 'ok', stdout: 'hi\n', value: 42 })
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(fake.calls.slice(before)).toEqual(['PUT sessions/start', 'POST tools/invoke', 'PUT sessions/stop'])
    expect(fake.openSessions()).toEqual([])
  })

  test('calls with one sessionId reuse one AgentCore session until closed; others get their own', async () => {
    const before = fake.calls.length
    await adapter.execute({ language: 'javascript', code: '1', sessionId: 'chat-1' }, contractContext())
    await adapter.execute({ language: 'javascript', code: '2', sessionId: 'chat-1' }, contractContext())
    expect(fake.calls.slice(before).filter((call) => call === 'PUT sessions/start')).toHaveLength(1)
    expect(fake.openSessions()).toHaveLength(1)
    await adapter.execute({ language: 'javascript', code: '3', sessionId: 'chat-2' }, contractContext())
    expect(fake.openSessions()).toHaveLength(2)
    expect(await adapter.closeSession('chat-1')).toBe(true)
    expect(await adapter.closeSession('chat-1')).toBe(false)
    expect(fake.openSessions()).toHaveLength(1)
    await adapter.dispose() // stops the rest: nothing leaks
    expect(fake.openSessions()).toEqual([])
    adapter = new BedrockAdapter(adapterOptions())
  })

  test('TypeScript is transpiled and run as JavaScript', async () => {
    const result = await adapter.execute({ language: 'typescript', code: 'const n: number = 6\nn * 7' }, contractContext())
    expect({ status: result.status, value: result.value }).toEqual({ status: 'ok', value: 42 })
  })

  test('a thrown null is an error that says what was thrown, not "null"', async () => {
    const result = await adapter.execute({ language: 'javascript', code: 'throw null' }, contractContext())
    expect({ status: result.status, message: result.message }).toEqual({
      status: 'error',
      message: 'the code threw null, not an Error',
    })
  })

  test('throttling, access denied and an unknown interpreter are unavailable (routing falls back), with the reason', async () => {
    for (const [name, pattern] of [
      ['ThrottlingException', /throttling/],
      ['AccessDeniedException', /access denied by AWS/],
    ] as const) {
      const failure = { operation: 'PUT sessions/start', name }
      fake.failures.push(...(name === 'ThrottlingException' ? [failure, failure] : [failure])) // the SDK retries throttling once
      const result = await adapter.execute({ language: 'python', code: '1' }, contractContext())
      expect({ status: result.status, type: result.error?.type }).toEqual({ status: 'unavailable', type: name })
      expect(result.message).toMatch(pattern)
    }
    const unknown = await new BedrockAdapter({ ...adapterOptions(), codeInterpreter: 'my-interpreter-123' }).checkAvailability()
    expect(unknown).toMatchObject({ status: 'unavailable', reason: expect.stringContaining('not found') })
    expect((await adapter.checkAvailability()).status).toBe('available')
  })

  test('an endpoint that is down is unavailable, and routing falls back to a local adapter', async () => {
    const down = new BedrockAdapter({ endpoint: 'http://127.0.0.1:9', region: 'us-east-1' })
    expect(await down.checkAvailability()).toMatchObject({
      status: 'unavailable',
      reason: expect.stringMatching(/unreachable|ECONNREFUSED/),
    })
    const execgate = await createExecgate({
      overrides: {
        execution: { enabled: ['bedrock', 'quickjs'], adapter: 'bedrock', fallback: ['quickjs'] },
        adapters: { bedrock: { endpoint: 'http://127.0.0.1:9' } },
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
        from: 'bedrock',
      })
    } finally {
      await execgate.dispose()
    }
  }, 30_000)
})

describe('bedrock error mapping (unit, aws-sdk-client-mock)', () => {
  test('each AWS error maps to the status routing needs', async () => {
    expect(mapAwsError(Object.assign(new Error('slow down'), { name: 'ServiceQuotaExceededException' }))).toMatchObject({
      status: 'unavailable',
    })
    expect(mapAwsError(Object.assign(new Error('bad'), { name: 'ValidationException' }))).toMatchObject({ status: 'invalid_request' })
    expect(
      mapAwsError(Object.assign(new Error('getaddrinfo ENOTFOUND bedrock-agentcore.xx-nowhere-1.amazonaws.com'), { code: 'ENOTFOUND' })),
    ).toMatchObject({ status: 'unavailable', type: 'UnknownEndpoint' })
    const mock = mockClient(BedrockAgentCoreClient)
    mock.onAnyCommand().rejects(Object.assign(new Error('expired'), { name: 'ExpiredTokenException' }))
    const adapter = new BedrockAdapter({ client: new BedrockAgentCoreClient({ region: 'us-east-1' }) })
    const result = await adapter.execute({ language: 'python', code: '1' }, contractContext())
    expect(result).toMatchObject({ status: 'unavailable', error: { type: 'ExpiredTokenException' } })
    await adapter.dispose()
    mock.restore()
  })
})
