import { ContainerModule } from 'inversify'
import { createExecgate, tokens, type Execgate } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import { BINARY_BODY, startLoopbackServers, type LoopbackServers } from './loopback-servers'
import { PyodideAdapter } from '../../adapters/pyodide'
import { contractContext } from '../contract/adapter-contract'

/**
 * pyodide's network: its own http helpers (`pyodide.http.pyfetch`, `open_url`) and urllib are steered to the run's
 * `http_request` host function, so every request goes through the egress gateway's rules, address check and record.
 */
let servers: LoopbackServers
let execgate: Execgate
const TOKEN = 'sk-pyodide-0123456789abcdef'

beforeAll(async () => {
  servers = await startLoopbackServers()
  const gateway = new EgressGateway({
    resolver: tableResolver({ 'api.example.test': '127.0.0.1', 'metadata.example.test': '169.254.169.254' }),
    allowPrivateRanges: ['127.0.0.0/8'],
    secrets: { api: { env: 'API_TOKEN', hosts: [`api.example.test:${servers.http.port}`] } },
    environment: { API_TOKEN: TOKEN },
  })
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['pyodide'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: {
        defaultPolicy: {
          wallTimeMs: 20_000,
          cpuTimeMs: 20_000,
          network: [`*.example.test:${servers.http.port}`],
          allowedImports: ['urllib', 'json', 'pyodide', 'asyncio', 'hashlib'],
          hostCalls: { maxCount: 50, maxTotalMs: 20_000 },
        },
      },
    },
    modules: [new ContainerModule(({ rebindSync }) => void rebindSync(tokens.EgressGateway).toConstantValue(gateway))],
  })
}, 120_000)
afterAll(async () => {
  await execgate?.dispose()
  await servers?.close()
})

const python = (code: string, network?: 'none') =>
  execgate.execute({ language: 'python', code, adapter: 'pyodide', ...(network ? { policy: { network } } : {}) })

test('urllib, pyfetch and open_url go through the gateway; the record has each request', async () => {
  const url = `http://api.example.test:${servers.http.port}/hello`
  const result = await python(`import urllib.request, json
from pyodide.http import pyfetch, open_url
a = urllib.request.urlopen('${url}').read().decode()
r = await pyfetch('${url}')
b = [r.status, r.ok, await r.text()]
c = open_url('${url}').read()
d = json.loads(urllib.request.urlopen(
    urllib.request.Request('http://api.example.test:${servers.http.port}/echo', data=b'{"x": 1}', method='POST')
).read())
[a, b, c, d]`)
  expect(result).toMatchObject({
    status: 'ok',
    value: ['hello from loopback', [200, true, 'hello from loopback'], 'hello from loopback', { x: 1 }],
  })
  expect(result.egress?.map((record) => [record.method, record.host, record.status, record.decision])).toEqual([
    ['GET', 'api.example.test', 200, 'allowed'],
    ['GET', 'api.example.test', 200, 'allowed'],
    ['GET', 'api.example.test', 200, 'allowed'],
    ['POST', 'api.example.test', 200, 'allowed'],
  ])
}, 60_000)

test('binary bodies arrive intact: urllib, pyfetch bytes() and a binary upload echoed back', async () => {
  const base = `http://api.example.test:${servers.http.port}`
  const result = await python(`import urllib.request, hashlib
from pyodide.http import pyfetch
a = urllib.request.urlopen('${base}/bytes').read()
r = await pyfetch('${base}/bytes')
b = await r.bytes()
upload = bytes(range(255, -1, -1)) * 2
c = urllib.request.urlopen(urllib.request.Request('${base}/echo-bytes', data=upload, method='POST')).read()
[type(a).__name__, len(a), hashlib.sha256(a).hexdigest(), a == b, len(c), c == upload, a[126:132].hex()]`)
  expect(result).toMatchObject({
    status: 'ok',
    value: ['bytes', 1024, createHash('sha256').update(BINARY_BODY).digest('hex'), true, 512, true, '7e7f80818283'],
  })
  expect(result.egress?.map((record) => [record.method, record.bytesIn, record.bytesOut])).toEqual([
    ['GET', 1024, 0],
    ['GET', 1024, 0],
    ['POST', 512, 512],
  ])
}, 60_000)

test('a refused address is an error inside the code, naming why; the record has it', async () => {
  const result = await python(`import urllib.request, urllib.error
try:
    urllib.request.urlopen('http://metadata.example.test:${servers.http.port}/latest/meta-data/')
    r = 'reached'
except urllib.error.URLError as e:
    r = str(e.reason)
r`)
  expect(result).toMatchObject({ status: 'ok', value: expect.stringMatching(/169\.254\.169\.254 is in a link-local/) })
  expect(result.egress).toEqual([expect.objectContaining({ decision: 'denied', rule: 'private address' })])
}, 60_000)

test('an HTTP error status is urllib HTTPError, as with sockets', async () => {
  const result = await python(`import urllib.request, urllib.error
try:
    urllib.request.urlopen('http://api.example.test:${servers.http.port}/missing')
    r = 'no error'
except urllib.error.HTTPError as e:
    r = e.code
r`)
  expect(result).toMatchObject({ status: 'ok', value: 404 })
}, 60_000)

test('a run whose policy allows no network: the helpers refuse, and the next run with network works again', async () => {
  const closed = await python(
    `import urllib.request\ntry:\n    ` +
      `urllib.request.urlopen('http://api.example.test:${servers.http.port}/hello')\n    r = ` +
      `'reached'\nexcept Exception as e:\n    r = str(e)\nr`,
    'none',
  )
  expect(closed).toMatchObject({ status: 'ok', value: expect.stringMatching(/network access is not allowed/) })
  expect(closed.egress).toBeUndefined()
  const open = await python(
    `import urllib.request\nurllib.request.urlopen('http://api.example.test:${servers.http.port}/hello').read().decode()`,
  )
  expect(open).toMatchObject({ status: 'ok', value: 'hello from loopback' })
}, 60_000)

test('the secret reaches its host and never the code', async () => {
  const result = await python(`import urllib.request, json
json.loads(urllib.request.urlopen('http://api.example.test:${servers.http.port}/headers').read()).get('authorization')`)
  expect(servers.seen.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`)
  expect(result.value).toBe(`Bearer ${'*'.repeat(TOKEN.length)}`)
  expect(JSON.stringify(result)).not.toContain(TOKEN)
}, 60_000)

test("the JS bridge finds no socket in the interpreter's process: every way to one measured open before is refused", async () => {
  // Straight on the adapter: the service's static check refuses `import js`, but it is never the boundary.
  let connections = 0
  const listener = net.createServer((socket) => {
    connections++
    socket.destroy()
  })
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
  const port = (listener.address() as net.AddressInfo).port
  const adapter = new PyodideAdapter()
  try {
    const ways = [
      `process.getBuiltinModule('net').connect(${port}, '127.0.0.1')`,
      `process.mainModule.require('net').connect(${port}, '127.0.0.1')`,
      `new process.stdout.constructor().connect(${port}, '127.0.0.1')`,
      `process.getBuiltinModule('http').get('http://127.0.0.1:${port}/')`,
    ]
    const attempt = (way: string) => `(() => { try { ${way}; return 'opened' } catch (e) { return 'refused' } })()`
    const code = [
      'import js',
      'out = []',
      ...ways.map((way) => `try:\n    out.append(js.eval(${JSON.stringify(attempt(way))}))\nexcept Exception:\n    out.append('refused')`),
      'out',
    ].join('\n')
    const result = await adapter.execute({ language: 'python', code }, contractContext({ allowedImports: ['js'] }))
    expect({ status: result.status, value: result.value }).toEqual({ status: 'ok', value: ways.map(() => 'refused') })
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(connections).toBe(0)
  } finally {
    await adapter.dispose()
    await new Promise((resolve) => listener.close(resolve))
  }
}, 120_000)

test("with bubblewrap, the interpreter's process is in a network namespace of its own: nothing it opens reaches the host", async () => {
  // Installed by scripts/setup/bubblewrap.sh; without it pyodide's network stays soft (docs/network.md).
  expect({ bwrap: fs.existsSync('/usr/bin/bwrap'), install: 'bash scripts/setup/bubblewrap.sh' }).toMatchObject({ bwrap: true })
  let connections = 0
  const listener = net.createServer((socket) => {
    connections++
    socket.destroy()
  })
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
  const port = (listener.address() as net.AddressInfo).port
  const adapter = new PyodideAdapter({ poolSize: 1 })
  try {
    // Construction does no process work: the probe runs at the pool's first start, and until it has succeeded the
    // adapter claims only the first layer (docs/adapters/pyodide.md).
    expect(adapter.capabilities.enforcement.network).toBe('soft')
    await adapter.warmUp()
    expect(adapter.capabilities.enforcement.network).toBe('hard')
    expect(adapter.capabilities.isolation).toMatch(/network namespace of its own \(bubblewrap\)/)
    // The interpreter's process, read while it lives: the run below reaches JavaScript, so it is replaced after it.
    const { pool } = adapter as unknown as { pool: { all: Set<{ processPid?: number }> } }
    const [pid] = [...pool.all].map((member) => member.processPid)
    const namespace = (id: number | 'self') => fs.readlinkSync(`/proc/${id}/ns/net`)
    expect(namespace(pid!)).toMatch(/^net:\[\d+\]$/)
    expect(namespace(pid!)).not.toBe(namespace('self'))
    // What the first layer leaves (fetch over undici, a fresh http.Agent's socket) tried too; whatever answers
    // inside, the namespace has only its own loopback: the host's listener must see nothing.
    const code = `import js
out = []
for way in ["fetch('http://127.0.0.1:${port}/').then(() => 'opened', (e) => 'failed')", "Promise.resolve('none')"]:
    try:
        out.append(await js.eval(way))
    except Exception:
        out.append('refused')
out`
    const result = await adapter.execute({ language: 'python', code }, contractContext({ allowedImports: ['js'] }))
    expect(result.status).toBe('ok')
    const [fetched] = result.value as [string]
    expect(fetched).not.toBe('opened')
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(connections).toBe(0)
  } finally {
    await adapter.dispose()
    await new Promise((resolve) => listener.close(resolve))
  }
}, 120_000)

test("where bubblewrap cannot make a namespace, the probe says so at the first start: runs work and network stays 'soft'", async () => {
  // /bin/false exits 1 for the probe's `node --version`: the same answer as a bwrap without user namespaces.
  const adapter = new PyodideAdapter({ poolSize: 1, bwrapPath: '/bin/false' })
  try {
    const result = await adapter.execute({ language: 'python', code: '1 + 1' }, contractContext())
    expect(result).toMatchObject({ status: 'ok', value: 2 })
    expect(adapter.capabilities.enforcement.network).toBe('soft')
    expect(adapter.capabilities.isolation).not.toMatch(/bubblewrap/)
    // Not namespaced: the interpreter's process (the one that ran, kept: the run stayed inside WebAssembly) shares the
    // host's network namespace.
    const { pool } = adapter as unknown as { pool: { all: Set<{ processPid?: number }> } }
    const [pid] = [...pool.all].map((member) => member.processPid)
    expect(fs.readlinkSync(`/proc/${pid}/ns/net`)).toBe(fs.readlinkSync('/proc/self/ns/net'))
  } finally {
    await adapter.dispose()
  }
}, 120_000)
