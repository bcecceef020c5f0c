import { ContainerModule } from 'inversify'
import { DockerAdapter } from '../../adapters/docker'
import { createExecgate, tokens, type Execgate, type ExecutionResult } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * Rules that name methods, over HTTPS. A blind CONNECT tunnel would hide the method, so the gateway re-terminates the
 * TLS of a host the run's rules allow only for some methods (no secret configured here): the sandbox trusts the
 * gateway's CA through its bundle, each request inside is checked with its method, and a refused one is a 403 inside
 * the code with the rule's words. On the process tier (Python urllib, Node fetch) and the docker tier (urllib), against
 * a real HTTPS server on loopback whose certificate the gateway verifies.
 */
const SOCKET = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'
let servers: LoopbackServers
let execgate: Execgate

beforeAll(async () => {
  const availability = await new DockerAdapter({ socketPath: SOCKET }).checkAvailability()
  if (availability.status !== 'available')
    throw new Error(`the docker adapter's engine is not ready (run bash scripts/setup/podman.sh): ${availability.reason}`)
  servers = await startLoopbackServers()
  const gateway = new EgressGateway({
    resolver: tableResolver({ 'api.example.test': '127.0.0.1' }),
    allowPrivateRanges: ['127.0.0.0/8'],
    // The upstream's certificate is from the test's own CA: the gateway verifies it against that and the system's.
    extraCa: [servers.caPem],
  })
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['process', 'docker'] },
      adapters: { docker: { socketPath: SOCKET } },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: {
        defaultPolicy: {
          wallTimeMs: 15_000,
          cpuTimeMs: 15_000,
          memoryMb: 256,
          network: [`GET,HEAD api.example.test:${servers.https.port}`],
          allowedImports: ['urllib', 'json', 'ssl', 'os', 'socket'],
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

const getAndPost = (port: number) => `import urllib.request, urllib.error, os
base = 'https://api.example.test:${port}'
got = urllib.request.urlopen(base + '/hello').read().decode()
try:
    urllib.request.urlopen(urllib.request.Request(base + '/echo', data=b'x', method='POST'))
    posted = 'reached'
except urllib.error.HTTPError as e:
    posted = [e.code, e.read().decode()]
[got, posted, os.environ.get('SSL_CERT_FILE')]`

function expectGetAllowedPostRefused(result: ExecutionResult) {
  const port = servers.https.port
  // Why a run failed, in the diff when it does.
  expect({
    status: result.status,
    why: result.status === 'ok' ? '' : `${result.message}\n${result.stderr.slice(-300)}\n${JSON.stringify(result.egress)}`,
  }).toEqual({
    status: 'ok',
    why: '',
  })
  expect(result).toMatchObject({
    status: 'ok',
    value: [
      'hello from loopback',
      [
        403,
        expect.stringContaining(
          `no rule allows POST to api.example.test:${port}: rule "GET,HEAD api.example.test:${port}" allows GET,HEAD`,
        ),
      ],
      '/run/execgate/ca-bundle.pem',
    ],
  })
  // The tunnel has no line of its own: each request inside is a line, with its method and https:// URL.
  expect(result.egress?.map((record) => [record.method, record.url, record.status, record.decision])).toEqual([
    ['GET', `https://api.example.test:${port}/hello`, 200, 'allowed'],
    ['POST', `https://api.example.test:${port}/echo`, 403, 'denied'],
  ])
}

test('process: urllib GET over HTTPS passes a GET-only rule, POST is refused inside the re-terminated tunnel', async () => {
  const before = servers.seen.length
  const result = await execgate.execute({ language: 'python', adapter: 'process', code: getAndPost(servers.https.port) })
  expectGetAllowedPostRefused(result)
  // The refused POST never reached the upstream.
  expect(servers.seen.slice(before).map((request) => `${request.method} ${request.path}`)).toEqual(['GET /hello'])
}, 60_000)

test("process: Node's fetch over HTTPS under the same rule", async () => {
  const result = await execgate.execute({
    language: 'javascript',
    adapter: 'process',
    code: `(async () => {
  const base = 'https://api.example.test:${servers.https.port}'
  const got = await fetch(base + '/hello')
  const posted = await fetch(base + '/echo', { method: 'POST', body: 'x' })
  return [got.status, await got.text(), posted.status]
})()`,
  })
  expect(result).toMatchObject({ status: 'ok', value: [200, 'hello from loopback', 403] })
  expect(result.egress?.map((record) => [record.method, record.decision])).toEqual([
    ['GET', 'allowed'],
    ['POST', 'denied'],
  ])
}, 60_000)

test('docker: the same rule, the same answers', async () => {
  const result = await execgate.execute({ language: 'python', adapter: 'docker', code: getAndPost(servers.https.port) })
  expectGetAllowedPostRefused(result)
}, 60_000)

test("code that trusts only its own CA list cannot be inspected, and so gets nothing: the gateway's TLS fails its check", async () => {
  const before = servers.seen.length
  const result = await execgate.execute({
    language: 'python',
    adapter: 'process',
    code: `import urllib.request, ssl
context = ssl.create_default_context(cadata=${JSON.stringify(servers.caPem)})
try:
    urllib.request.urlopen('https://api.example.test:${servers.https.port}/hello', context=context)
    r = 'reached'
except Exception as e:
    r = type(e).__name__ + ': ' + str(e)
r`,
  })
  expect(result.status).toBe('ok')
  expect(result.value).toMatch(/CERTIFICATE_VERIFY_FAILED|certificate verify failed/)
  expect(servers.seen.length).toBe(before)
}, 60_000)
