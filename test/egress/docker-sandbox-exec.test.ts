import { ContainerModule } from 'inversify'
import { DockerAdapter } from '../../adapters/docker'
import { createExecgate, tokens, type Execgate, type Sandbox } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * A persistent docker sandbox with network: its container keeps `NetworkMode: none`; each exec gets its own egress
 * run (rules, caps, record) through a socket the gateway opens in the folder bound at /run/execgate when the sandbox
 * was made, reached through the same forwarder as one-off docker runs. Real podman, real loopback servers as the
 * allowed and the forbidden host.
 */
const SOCKET = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'
let servers: LoopbackServers
let execgate: Execgate
let sandbox: Sandbox

beforeAll(async () => {
  const availability = await new DockerAdapter({ socketPath: SOCKET }).checkAvailability()
  if (availability.status !== 'available')
    throw new Error(`the docker adapter's engine is not ready (run bash scripts/setup/podman.sh): ${availability.reason}`)
  servers = await startLoopbackServers()
  const gateway = new EgressGateway({
    resolver: tableResolver({ 'api.example.test': '127.0.0.1', 'other.example.test': '127.0.0.1' }),
    allowPrivateRanges: ['127.0.0.0/8'],
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
          network: ['*.example.test:*'],
          allowedImports: ['urllib', 'json', 'socket', 'os'],
        },
      },
    },
    modules: [new ContainerModule(({ rebindSync }) => void rebindSync(tokens.EgressGateway).toConstantValue(gateway))],
  })
  sandbox = await execgate.sandboxes.start({ adapter: 'docker', policy: { network: [`api.example.test:${servers.http.port}`] } })
}, 90_000)
afterAll(async () => {
  await sandbox?.stop()
  await execgate?.dispose()
  await servers?.close()
})

const fetchBoth = (port: number) => `import urllib.request, urllib.error
out = []
for host in ['api', 'other']:
    try:
        out.append(urllib.request.urlopen('http://' + host + '.example.test:${port}/hello').read().decode())
    except urllib.error.HTTPError as e:
        out.append(e.code)
open('last.txt', 'w').write(repr(out))
out`

test("each exec reaches what the sandbox's rules allow, through the gateway, recorded in its own result", async () => {
  const first = await sandbox.exec({ language: 'python', code: fetchBoth(servers.http.port) })
  expect(first).toMatchObject({ status: 'ok', value: ['hello from loopback', 403] })
  expect(first.egress?.map((record) => [record.method, record.host, record.status, record.decision])).toEqual([
    ['GET', 'api.example.test', 200, 'allowed'],
    ['GET', 'other.example.test', 403, 'denied'],
  ])
  // The workspace is kept between execs; the network record is each exec's own.
  const second = await sandbox.exec({ language: 'python', code: `open('last.txt').read()` })
  expect(second).toMatchObject({ status: 'ok', value: "['hello from loopback', 403]" })
  expect(second.egress).toEqual([])
}, 90_000)

test("the image's Node fetch goes through the gateway too; a direct connection has no route", async () => {
  const node = await sandbox.exec({
    language: 'javascript',
    code: `(async () => {
  const allowed = await fetch('http://api.example.test:${servers.http.port}/hello')
  const refused = await fetch('http://other.example.test:${servers.http.port}/hello')
  return [allowed.status, await allowed.text(), refused.status]
})()`,
  })
  expect(node).toMatchObject({ status: 'ok', value: [200, 'hello from loopback', 403] })
  expect(node.egress?.map((record) => record.decision)).toEqual(['allowed', 'denied'])
  // Straight to the loopback server's port: the container's loopback is its own, and there is no other route.
  const direct = await sandbox.exec({
    language: 'python',
    code: `import socket
out = []
for host in ['127.0.0.1', '10.0.0.1', '169.254.169.254']:
    try:
        socket.create_connection((host, ${servers.http.port}), timeout=2)
        out.append('connected')
    except OSError as e:
        out.append(type(e).__name__)
out`,
  })
  expect(direct.status).toBe('ok')
  expect(direct.value).not.toContain('connected')
}, 90_000)

test('an exec that tightens the network to none gets no forwarder and no socket; a later exec has its own again', async () => {
  const closed = await sandbox.exec({
    language: 'python',
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
  expect(closed.egress).toBeUndefined()
  const again = await sandbox.exec({ language: 'python', code: fetchBoth(servers.http.port) })
  expect(again).toMatchObject({ status: 'ok', value: ['hello from loopback', 403] })
}, 90_000)

test("an exec cannot loosen the sandbox's network, and a sandbox started without network has no way out", async () => {
  const looser = await sandbox.exec({ language: 'python', policy: { network: ['*.example.test:*'] }, code: '1' })
  expect(looser.status).toBe('policy_violation')
  expect(looser.message).toMatch(/network/)
  const offline = await execgate.sandboxes.start({ adapter: 'docker', policy: { network: 'none' } })
  try {
    const result = await offline.exec({
      language: 'python',
      code: `import os
[os.path.exists('/run/execgate'), os.environ.get('HTTP_PROXY')]`,
    })
    expect(result).toMatchObject({ status: 'ok', value: [false, null] })
  } finally {
    await offline.stop()
  }
}, 90_000)
