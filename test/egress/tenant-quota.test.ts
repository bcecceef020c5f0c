import { ContainerModule } from 'inversify'
import { createExecgate, tokens, type Execgate } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * Per-tenant egress quotas in admission (`admission.tenants.<t>.egressRequestsPerMinute` / `egressBytesPerMinute`):
 * once a tenant's runs have spent them in the last minute, its next run with network is refused naming the quota,
 * with a retry hint; a run without network, and other tenants, still go. Real quickjs runs through the real gateway
 * to a loopback server. Requests are counted as they happen, so a run already admitted is cut when its tenant's
 * quota runs out mid-run.
 */
let servers: LoopbackServers
let execgate: Execgate

beforeAll(async () => {
  servers = await startLoopbackServers()
  const gateway = new EgressGateway({
    resolver: tableResolver({ 'api.example.test': '127.0.0.1' }),
    allowPrivateRanges: ['127.0.0.0/8'],
    caps: { maxRequests: 200 },
  })
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      admission: {
        tenants: {
          acme: { egressRequestsPerMinute: 3 },
          globex: { egressBytesPerMinute: 4096 },
          hooli: { egressRequestsPerMinute: 2 },
          umbrella: { egressRequestsPerMinute: 120 },
        },
      },
      security: { defaultPolicy: { network: ['api.example.test:*'], hostCalls: { maxCount: 200, maxTotalMs: 20_000 } } },
    },
    modules: [new ContainerModule(({ rebindSync }) => void rebindSync(tokens.EgressGateway).toConstantValue(gateway))],
  })
}, 60_000)
afterAll(async () => {
  await execgate?.dispose()
  await servers?.close()
})

const fetchTimes = (times: number, path = '/hello') =>
  `let n = 0; for (let i = 0; i < ${times}; i++) { const r = await ` +
  `http_request('http://api.example.test:${servers.http.port}${path}'); n += r.body.length } n`

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

test('a run admitted with quota left is cut mid-run when it runs out: the next request is refused, naming the quota', async () => {
  const code = `const out = []
for (let i = 0; i < 4; i++) {
  try {
    out.push((await http_request('http://api.example.test:${servers.http.port}/hello')).status)
  } catch (e) {
    out.push(String(e.message ?? e))
  }
}
out`
  const result = await execgate.execute({ language: 'javascript', code }, { tenant: 'hooli' })
  expect(result.status).toBe('ok')
  const answers = result.value as unknown[]
  expect(answers.slice(0, 2)).toEqual([200, 200])
  for (const refused of answers.slice(2)) {
    expect(refused).toMatch(
      new RegExp(
        /tenant hooli's egress quota is spent: 2 of its 2 egress requests in the last minute /.source +
          /\(admission\.tenants\.hooli\.egressRequestsPerMinute\)/.source,
      ),
    )
  }
  expect(result.egress?.map((record) => [record.decision, record.rule])).toEqual([
    ['allowed', 'api.example.test:*'],
    ['allowed', 'api.example.test:*'],
    ['denied', 'tenant quota'],
    ['denied', 'tenant quota'],
  ])
  expect(result.egress?.[2]?.reason).toContain('admission.tenants.hooli.egressRequestsPerMinute')
}, 30_000)

test("every request counts against the quota, past the 100 lines a run's record keeps", async () => {
  const spend = await execgate.execute({ language: 'javascript', code: fetchTimes(110) }, { tenant: 'umbrella' })
  expect(spend).toMatchObject({ status: 'ok', value: 110 * 'hello from loopback'.length })
  expect(spend.egress).toHaveLength(100)
  const cut = await execgate.execute(
    {
      language: 'javascript',
      code:
        `let ok = 0, refused = 0; for (let i = 0; i < 15; i++) { try { await ` +
        `http_request('http://api.example.test:${servers.http.port}/hello'); ok++ } catch { ` +
        `refused++ } } [ok, refused]`,
    },
    { tenant: 'umbrella' },
  )
  expect(cut).toMatchObject({ status: 'ok', value: [10, 5] })
  const refused = await execgate.execute({ language: 'javascript', code: fetchTimes(1) }, { tenant: 'umbrella' })
  expect(refused).toMatchObject({ status: 'unavailable', error: { code: 'EXECGATE_QUOTA_EXCEEDED' } })
  expect(refused.message).toMatch(/used 120 of its 120 egress requests in the last minute/)
}, 60_000)
