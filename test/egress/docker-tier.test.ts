import { ContainerModule } from 'inversify'
import { DockerAdapter } from '../../adapters/docker'
import { createExecgate, tokens, type Execgate } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * The docker tier's network: the container keeps `NetworkMode: none` (only loopback), and the run's proxy socket,
 * bound in and reached through the forwarder on the container's 127.0.0.1:3128, is its only way out. Real podman,
 * real programs: the image's Python urllib and Node 18 fetch, and a raw socket that tries to go around the proxy.
 */
const SOCKET = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'
let servers: LoopbackServers
let execgate: Execgate
const TOKEN = 'sk-docker-0123456789abcdef'

beforeAll(async () => {
  const availability = await new DockerAdapter({ socketPath: SOCKET }).checkAvailability()
  if (availability.status !== 'available')
    throw new Error(`the docker adapter's engine is not ready (run bash scripts/setup/podman.sh): ${availability.reason}`)
  servers = await startLoopbackServers()
  const gateway = new EgressGateway({
    resolver: tableResolver({
      'api.example.test': '127.0.0.1',
      'other.example.test': '127.0.0.1',
      'metadata.example.test': '169.254.169.254',
    }),
    allowPrivateRanges: ['127.0.0.0/8'],
    secrets: { api: { env: 'API_TOKEN', hosts: [`api.example.test:${servers.http.port}`] } },
    environment: { API_TOKEN: TOKEN },
  })
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['docker'] },
      adapters: { docker: { socketPath: SOCKET } },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: {
        defaultPolicy: {
          wallTimeMs: 15_000,
          cpuTimeMs: 15_000,
          memoryMb: 256,
          network: [`*.example.test:${servers.http.port}`, `api.example.test:${servers.https.port}`, '*:80'],
          allowedImports: ['urllib', 'json', 'socket', 'ssl', 'os'],
        },
      },
    },
    modules: [new ContainerModule(({ rebindSync }) => void rebindSync(tokens.EgressGateway).toConstantValue(gateway))],
  })
}, 60_000)
afterAll(async () => {
  await execgate?.dispose()
  await servers?.close()
})

const python = (code: string) => execgate.execute({ language: 'python', code, adapter: 'docker' })
const node = (code: string) => execgate.execute({ language: 'javascript', code, adapter: 'docker' })

test("Python's urllib goes through the gateway; the record has the request", async () => {
  const result = await python(
    `import urllib.request\nurllib.request.urlopen('http://api.example.test:${servers.http.port}/hello').read().decode()`,
  )
  expect(result).toMatchObject({ status: 'ok', value: 'hello from loopback' })
  expect(result.egress).toEqual([expect.objectContaining({ method: 'GET', host: 'api.example.test', status: 200, decision: 'allowed' })])
}, 60_000)

test("the image's Node 18 fetch goes through the gateway: plain HTTP as a proxied request, HTTPS by CONNECT", async () => {
  const result = await node(`(async () => {
  const plain = await fetch('http://api.example.test:${servers.http.port}/hello')
  let secure
  try {
    secure = (await fetch('https://api.example.test:${servers.https.port}/hello')).status
  } catch (e) {
    secure = String(e.cause && e.cause.code || e.cause && e.cause.message)
  }
  let refused
  try {
    await fetch('https://metadata.example.test:${servers.http.port}/')
    refused = 'reached'
  } catch (e) {
    refused = String(e.cause && e.cause.message)
  }
  return [plain.status, await plain.text(), secure, refused]
})()`)
  expect(result.status).toBe('ok')
  // The HTTPS server's certificate is from the test's own CA, which the container does not trust: the tunnel opened
  // (the gateway allowed it) and TLS inside it failed on the client, as it should.
  expect(result.value).toEqual([
    200,
    'hello from loopback',
    expect.stringMatching(/CERT|certificate|self.signed|UNABLE/i),
    expect.stringMatching(/egress gateway refused CONNECT metadata\.example\.test:\d+: .*link-local/),
  ])
  expect(result.egress?.map((record) => [record.method, record.host, record.decision])).toEqual([
    ['GET', 'api.example.test', 'allowed'],
    ['CONNECT', 'api.example.test', 'allowed'],
    ['CONNECT', 'metadata.example.test', 'denied'],
  ])
}, 60_000)

test('a refused host is an HTTP 403 inside the code, naming the rule', async () => {
  const result = await python(`import urllib.request, urllib.error
try:
    urllib.request.urlopen('http://metadata.example.test/latest/meta-data/')
    r = 'reached'
except urllib.error.HTTPError as e:
    r = [e.code, e.read().decode()]
r`)
  expect(result.status).toBe('ok')
  expect(result.value).toEqual([
    403,
    expect.stringMatching(/egress refused: metadata\.example\.test resolves to 169\.254\.169\.254 .*link-local/),
  ])
  expect(result.egress).toEqual([expect.objectContaining({ decision: 'denied', rule: 'private address' })])
}, 60_000)

test('HTTPS through CONNECT with TLS end to end', async () => {
  const result = await python(`import urllib.request, ssl
context = ssl.create_default_context(cadata=${JSON.stringify(servers.caPem)})
urllib.request.urlopen('https://api.example.test:${servers.https.port}/hello', context=context).read().decode()`)
  expect(result).toMatchObject({ status: 'ok', value: 'hello from loopback' })
  expect(result.egress?.[0]).toMatchObject({ method: 'CONNECT', port: servers.https.port, decision: 'allowed' })
}, 60_000)

test('no way around the proxy: a direct connection has no route, and a run without network gets no forwarder', async () => {
  const result = await python(`import socket
out = []
for host in ['127.0.0.1', '169.254.169.254', '10.0.0.1', '8.8.8.8']:
    try:
        socket.create_connection((host, ${servers.http.port}), timeout=2)
        out.append('connected')
    except OSError as e:
        out.append(type(e).__name__)
out`)
  expect(result.status).toBe('ok')
  expect(result.value).not.toContain('connected')
  const closed = await execgate.execute({
    language: 'python',
    adapter: 'docker',
    policy: { network: 'none' },
    code: `import socket, os
try:
    socket.create_connection(('127.0.0.1', 3128), timeout=2)
    r = 'connected'
except OSError as e:
    r = type(e).__name__
[r, os.path.exists('/run/execgate/egress.sock'), os.environ.get('HTTP_PROXY')]`,
  })
  expect(closed).toMatchObject({ status: 'ok', value: ['ConnectionRefusedError', false, null] })
}, 60_000)

test('the secret reaches its host and never the code', async () => {
  const result = await python(`import urllib.request, os, json
body = urllib.request.urlopen('http://api.example.test:${servers.http.port}/headers').read().decode()
[json.loads(body).get('authorization'), sorted(k for k in os.environ if 'TOKEN' in k or 'SECRET' in k)]`)
  expect(servers.seen.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`)
  expect(result.value).toEqual([`Bearer ${'*'.repeat(TOKEN.length)}`, []])
  expect(JSON.stringify(result)).not.toContain(TOKEN)
}, 60_000)
