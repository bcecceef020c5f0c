import { QuickJsAdapter } from '../../adapters/quickjs'
import type { SecurityPolicy } from '../../src/core'
import { DefaultExecutionService } from '../../src/execution/execution-service'
import { createLogger } from '../../src/observability/logger'
import { DEFAULT_POLICY } from '../../src/policy'
import { ConfigRouter } from '../../src/routing/config-router'
import type { HostFunctionDefinition } from '../../src/workspace'

/**
 * `isRepeatable`: whether a run may be begun before it is sure to be wanted (the task scheduler's early start), which
 * may run its code once for nothing. Only a run whose every effect stays in its answer is: no session, no network, no
 * host function of the caller's. Nothing runs here: the answer comes from the request and the policies alone.
 */

const adapter = new QuickJsAdapter()
const registry = {
  get: (name: string) => (name === adapter.name ? adapter : undefined),
  list: () => [adapter],
  knownNames: () => [adapter.name],
}

function service(
  options: { basePolicy?: SecurityPolicy; profiles?: Record<string, SecurityPolicy>; hostFunctions?: HostFunctionDefinition[] } = {},
) {
  return new DefaultExecutionService({
    registry,
    router: new ConfigRouter(registry, adapter.name),
    basePolicy: options.basePolicy ?? DEFAULT_POLICY,
    logger: createLogger('silent'),
    graceMs: 200,
    ...(options.profiles ? { profiles: options.profiles } : {}),
    ...(options.hostFunctions ? { hostFunctions: options.hostFunctions } : {}),
  })
}

const request = { language: 'javascript' as const, code: '1 + 1' }
const withNetwork: SecurityPolicy = Object.freeze({ ...DEFAULT_POLICY, network: ['api.example.com'] })

afterAll(() => adapter.dispose())

test('a plain run under the default policy is repeatable; one that keeps a session is not', () => {
  const runs = service()
  expect(runs.isRepeatable(request, { tenant: 'acme' })).toBe(true)
  expect(runs.isRepeatable({ ...request, sessionId: 's-1' }, { tenant: 'acme' })).toBe(false)
})

test('a run whose policy names a host is not repeatable; the same request under a profile without network is', () => {
  const runs = service({ basePolicy: withNetwork, profiles: { offline: DEFAULT_POLICY } })
  expect(runs.isRepeatable(request, { tenant: 'acme' })).toBe(false)
  expect(runs.isRepeatable(request, { tenant: 'acme', profile: 'offline' })).toBe(true)
  // The request may tighten its policy to no network, and is then repeatable.
  expect(runs.isRepeatable({ ...request, policy: { network: 'none' } }, { tenant: 'acme' })).toBe(true)
})

test('a profile that names a host makes only its own runs unrepeatable', () => {
  const runs = service({ profiles: { online: withNetwork } })
  expect(runs.isRepeatable(request, { tenant: 'acme' })).toBe(true)
  expect(runs.isRepeatable(request, { tenant: 'acme', profile: 'online' })).toBe(false)
})

test('code that names a host function of the caller is not repeatable; the standard workspace functions are', () => {
  const notify: HostFunctionDefinition = {
    name: 'notify_team',
    description: 'posts a message',
    parameters: { type: 'object' },
    handler: () => true,
  }
  const runs = service({ hostFunctions: [notify] })
  expect(runs.isRepeatable({ ...request, code: 'notify_team({ text: "done" })' }, { tenant: 'acme' })).toBe(false)
  expect(runs.isRepeatable({ ...request, code: 'write_file("out.txt", "x")' }, { tenant: 'acme' })).toBe(true)
})
