import { ContainerModule } from 'inversify'
import { createExecgate, tokens, type Execgate } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * HTTPS secret re-termination on the process tier: for a host a secret goes to, the gateway answers the code's TLS
 * with a leaf from its per-server CA (trusted inside the sandbox only, through SSL_CERT_FILE / NODE_EXTRA_CA_CERTS),
 * adds the header, and goes on over TLS it verifies against the upstream's real certificate. The upstream is a real
 * HTTPS server on 127.0.0.1 (allowed through allowPrivateRanges, tests only) with a certificate of the test's own CA.
 */
let servers: LoopbackServers
let execgate: Execgate
const TOKEN = 'sk-tls-0123456789abcdef'

beforeAll(async () => {
  servers = await startLoopbackServers()
  const gateway = new EgressGateway({
    resolver: tableResolver({ 'api.example.test': '127.0.0.1', 'other.example.test': '127.0.0.1', 'wrong.example.test': '127.0.0.1' }),
    allowPrivateRanges: ['127.0.0.0/8'],
    // The upstream's certificate is verified by the gateway against the system's CAs and this one.
    extraCa: [servers.caPem],
    secrets: {
      api: { env: 'API_TOKEN', hosts: [`api.example.test:${servers.https.port}`, `wrong.example.test:${servers.https.port}`] },
    },
    environment: { API_TOKEN: TOKEN },
  })
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['process'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: {
        defaultPolicy: {
          wallTimeMs: 15_000,
          cpuTimeMs: 15_000,
          memoryMb: 512,
          network: [`*.example.test:${servers.https.port}`],
          allowedImports: ['urllib', 'json', 'ssl', 'os', 'socket'],
        },
      },
    },
    modules: [new ContainerModule(({ rebindSync }) => void rebindSync(tokens.EgressGateway).toConstantValue(gateway))],
  })
  const probe = await execgate.execute({ language: 'python', code: '1', adapter: 'process', policy: { network: 'none' } })
  if (probe.status !== 'ok') throw new Error(`the process adapter cannot run (${probe.message}): run bash scripts/setup-test-env.sh`)
}, 60_000)
afterAll(async () => {
  await execgate?.dispose()
  await servers?.close()
})

test("Python's urllib over HTTPS to a secret host: verified TLS inside, the header added, the echo scrubbed", async () => {
  const before = servers.seen.length
  const result = await execgate.execute({
    language: 'python',
    adapter: 'process',
    code: `import urllib.request, json, os
body = urllib.request.urlopen('https://api.example.test:${servers.https.port}/headers').read().decode()
[json.loads(body).get('authorization'), os.environ.get('SSL_CERT_FILE')]`,
  })
  expect(result).toMatchObject({ status: 'ok', value: [`Bearer ${'*'.repeat(TOKEN.length)}`, '/run/execgate/ca-bundle.pem'] })
  expect(servers.seen.slice(before).map((request) => request.headers.authorization)).toEqual([`Bearer ${TOKEN}`])
  expect(result.egress).toEqual([
    expect.objectContaining({
      method: 'GET',
      url: `https://api.example.test:${servers.https.port}/headers`,
      status: 200,
      decision: 'allowed',
    }),
  ])
  expect(JSON.stringify(result)).not.toContain(TOKEN)
}, 30_000)

test("Node's fetch over HTTPS to a secret host gets the header too; the code cannot read it", async () => {
  const before = servers.seen.length
  const result = await execgate.execute({
    language: 'javascript',
    adapter: 'process',
    code: `fetch('https://api.example.test:${servers.https.port}/headers').then(async (r) => [r.status, (await r.json()).authorization])`,
  })
  expect(result).toMatchObject({ status: 'ok', value: [200, `Bearer ${'*'.repeat(TOKEN.length)}`] })
  expect(servers.seen.slice(before).map((request) => request.headers.authorization)).toEqual([`Bearer ${TOKEN}`])
}, 30_000)

test('a host without a secret stays a blind tunnel: TLS end to end, no header, the gateway cannot read it', async () => {
  const before = servers.seen.length
  const result = await execgate.execute({
    language: 'python',
    adapter: 'process',
    code: `import urllib.request, ssl
try:
    urllib.request.urlopen('https://other.example.test:${servers.https.port}/headers')
    r = 'trusted'
except Exception as e:
    r = str(e)
r`,
  })
  // The sandbox trusts the system's CAs and the gateway's, not the test server's own CA: an untouched tunnel fails
  // verification in the code, as it should.
  expect(result).toMatchObject({ status: 'ok', value: expect.stringMatching(/CERTIFICATE_VERIFY_FAILED/) })
  expect(servers.seen.slice(before).every((request) => request.headers.authorization === undefined)).toBe(true)
  expect(result.egress).toEqual([expect.objectContaining({ method: 'CONNECT', host: 'other.example.test', decision: 'allowed' })])
}, 30_000)

test('the gateway verifies the upstream: a certificate for another name gets no secret and fails', async () => {
  const before = servers.seen.length
  const result = await execgate.execute({
    language: 'python',
    adapter: 'process',
    code: `import urllib.request, urllib.error
try:
    urllib.request.urlopen('https://wrong.example.test:${servers.https.port}/headers')
    r = 'reached'
except urllib.error.HTTPError as e:
    r = [e.code, e.read().decode()]
r`,
  })
  expect(result).toMatchObject({ status: 'ok', value: [502, expect.stringMatching(/wrong\.example\.test.*(altnames|certificate)/i)] })
  expect(servers.seen.slice(before)).toEqual([])
  expect(JSON.stringify(result)).not.toContain(TOKEN)
}, 30_000)
