import { ContainerModule } from 'inversify'
import { createExecgate, tokens, type Execgate } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * Per-tenant egress quotas in admission (`admission.tenants.<t>.egressRequestsPerMinute` / `egressBytesPerMinute`):
 * once a tenant's runs have spent them in the last minute, its next run with network is refused naming the quota,
 * with a retry hint; a run without network, and other tenants, still go. Real quickjs runs through the real gateway
 * to a loopback server.
 */
let servers: LoopbackServers
let execgate: Execgate

beforeAll(async () => {
  servers = await startLoopbackServers()
  const gateway = new EgressGateway({ resolver: tableResolver({ 'api.example.test': '127.0.0.1' }), allowPrivateRanges: ['127.0.0.0/8'] })
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      admission: { tenants: { acme: { egressRequestsPerMinute: 3 }, globex: { egressBytesPerMinute: 4096 } } },
      security: { defaultPolicy: { network: ['api.example.test:*'], hostCalls: { maxCount: 20, maxTotalMs: 10_000 } } },
    },
    modules: [new ContainerModule(({ rebindSync }) => void rebindSync(tokens.EgressGateway).toConstantValue(gateway))],
  })
}, 60_000)
afterAll(async () => {
  await execgate?.dispose()
  await servers?.close()
})

const fetchTimes = (times: number, path = '/hello') =>
  `let n = 0; for (let i = 0; i < ${times}; i++) { const r = await http_request('http://api.example.test:${servers.http.port}${path}'); n += r.body.length } n`

test("a tenant's egress requests per minute: spent, its next run with network is refused naming the quota", async () => {
  const spend = await execgate.execute({ language: 'javascript', code: fetchTimes(3) }, { tenant: 'acme' })
  expect(spend).toMatchObject({ status: 'ok', value: 3 * 'hello from loopback'.length })
  const refused = await execgate.execute({ language: 'javascript', code: fetchTimes(1) }, { tenant: 'acme' })
  expect(refused).toMatchObject({ status: 'unavailable', error: { code: 'EXECGATE_QUOTA_EXCEEDED' } })
  expect(refused.message).toContain('admission.tenants.acme.egressRequestsPerMinute')
  expect(refused.message).toMatch(/used 3 of its 3 egress requests in the last minute/)
  expect(refused.retryAfterMs).toBeGreaterThan(50_000)
  // No network, no egress used: still admitted. Another tenant: its own quota.
  const offline = await execgate.execute({ language: 'javascript', code: '1 + 1', policy: { network: 'none' } }, { tenant: 'acme' })
  expect(offline).toMatchObject({ status: 'ok', value: 2 })
  const other = await execgate.execute({ language: 'javascript', code: fetchTimes(1) }, { tenant: 'initech' })
  expect(other.status).toBe('ok')
}, 30_000)

test("a tenant's egress bytes per minute count what its runs received and sent", async () => {
  const spend = await execgate.execute({ language: 'javascript', code: fetchTimes(1, '/big?bytes=5000') }, { tenant: 'globex' })
  expect(spend).toMatchObject({ status: 'ok', value: 5000 })
  const refused = await execgate.execute({ language: 'javascript', code: fetchTimes(1) }, { tenant: 'globex' })
  expect(refused).toMatchObject({ status: 'unavailable', error: { code: 'EXECGATE_QUOTA_EXCEEDED' } })
  expect(refused.message).toContain('admission.tenants.globex.egressBytesPerMinute')
}, 30_000)
