import { ContainerModule } from 'inversify'
import { createExecgate, tokens, type Execgate } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * The process tier's network: the sandbox's own namespace has only loopback, and the egress gateway's proxy socket
 * bound in (through a forwarder on the sandbox's 127.0.0.1:3128) is the only way out. Real programs: Python's
 * urllib, Node's fetch, and a raw socket that tries to go around the proxy.
 */
let servers: LoopbackServers
let execgate: Execgate
const TOKEN = 'sk-proc-0123456789abcdef'

beforeAll(async () => {
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
      execution: { enabled: ['process'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: {
        defaultPolicy: {
          wallTimeMs: 15_000,
          cpuTimeMs: 15_000,
          memoryMb: 512,
          network: [`*.example.test:${servers.http.port}`, `api.example.test:${servers.https.port}`, '*:80'],
          allowedImports: ['urllib', 'json', 'socket', 'ssl', 'os'],
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

const python = (code: string) => execgate.execute({ language: 'python', code, adapter: 'process' })
const node = (code: string) => execgate.execute({ language: 'javascript', code, adapter: 'process' })

test("Python's urllib goes through the gateway; the record has the request", async () => {
  const result = await python(
    `import urllib.request\nurllib.request.urlopen('http://api.example.test:${servers.http.port}/hello').read().decode()`,
  )
  expect(result).toMatchObject({ status: 'ok', value: 'hello from loopback' })
  expect(result.egress).toEqual([expect.objectContaining({ method: 'GET', host: 'api.example.test', status: 200, decision: 'allowed' })])
}, 30_000)

test("the interpreter's own HTTP clients reach the gateway's socket straight, the forwarder still answers", async () => {
  // The runner's shortcut (adapters/shared/interpreter-runners.ts): urllib's connection to the proxy address is the
  // gateway's unix socket itself; a raw TCP connection to 127.0.0.1:3128 (what a program the code starts makes) is
  // the forwarder's, which carries it to the same socket.
  const result = await python(`import socket, urllib.request
via = socket.create_connection(('127.0.0.1', 3128))
raw = socket.socket()
raw.connect(('127.0.0.1', 3128))
raw.sendall(
    b'GET http://api.example.test:${servers.http.port}/hello HTTP/1.1\\r\\n'
    b'Host: api.example.test\\r\\nConnection: close\\r\\n\\r\\n'
)
answer = b''
while True:
    chunk = raw.recv(65536)
    if not chunk:
        break
    answer += chunk
[
    via.family.name,
    raw.family.name,
    answer.split(b'\\r\\n')[0].decode(),
    urllib.request.urlopen('http://api.example.test:${servers.http.port}/hello').read().decode(),
]`)
  expect(result).toMatchObject({ status: 'ok', value: ['AF_UNIX', 'AF_INET', 'HTTP/1.1 200 OK', 'hello from loopback'] })
  expect(result.egress?.map((record) => record.decision)).toEqual(['allowed', 'allowed'])
}, 30_000)

test("Node's fetch goes through the gateway too", async () => {
  const result = await node(`fetch('http://api.example.test:${servers.http.port}/hello').then(async (r) => [r.status, await r.text()])`)
  expect(result).toMatchObject({ status: 'ok', value: [200, 'hello from loopback'] })
  expect(result.egress?.[0]).toMatchObject({
    method: 'GET',
    url: `http://api.example.test:${servers.http.port}/hello`,
    decision: 'allowed',
    status: 200,
  })
}, 30_000)

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
    expect.stringMatching(
      /egress refused: metadata\.example\.test resolves to 169\.254\.169\.254 is in a link-local .*rule: private address/,
    ),
  ])
  expect(result.egress).toEqual([expect.objectContaining({ decision: 'denied', rule: 'private address' })])
}, 30_000)

test('HTTPS through CONNECT, TLS end to end; a disallowed port is refused', async () => {
  const result = await python(`import urllib.request, urllib.error, ssl
context = ssl.create_default_context(cadata=${JSON.stringify(servers.caPem)})
body = urllib.request.urlopen('https://api.example.test:${servers.https.port}/hello', context=context).read().decode()
try:
    urllib.request.urlopen('https://api.example.test:8443/hello', context=context)
    other = 'reached'
except urllib.error.URLError as e:
    other = str(e.reason)
[body, other]`)
  expect(result.value).toEqual(['hello from loopback', expect.stringMatching(/403/)])
  expect(result.egress?.map((record) => [record.method, record.port, record.decision])).toEqual([
    ['CONNECT', servers.https.port, 'allowed'],
    ['CONNECT', 8443, 'denied'],
  ])
}, 30_000)

test('no way around the proxy: a direct connection to the host has no route', async () => {
  const result = await python(`import socket
out = []
for host in ['127.0.0.1', '169.254.169.254', '10.0.0.1']:
    try:
        socket.create_connection((host, ${servers.http.port}), timeout=2)
        out.append('connected')
    except OSError as e:
        out.append(type(e).__name__)
out`)
  expect(result.status).toBe('ok')
  expect(result.value).not.toContain('connected')
}, 30_000)

test('the secret reaches its host and never the code; the environment holds no secret', async () => {
  const result = await python(`import urllib.request, os, json
body = urllib.request.urlopen('http://api.example.test:${servers.http.port}/headers').read().decode()
[json.loads(body).get('authorization'), sorted(k for k in os.environ if 'TOKEN' in k or 'SECRET' in k)]`)
  expect(servers.seen.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`)
  expect(result.value).toEqual([`Bearer ${'*'.repeat(TOKEN.length)}`, []])
  expect(JSON.stringify(result)).not.toContain(TOKEN)
}, 30_000)
