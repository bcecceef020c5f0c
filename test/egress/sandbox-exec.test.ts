import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ContainerModule } from 'inversify'
import { createExecgate, tokens, type Execgate, type Sandbox } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * A persistent process-tier sandbox with network: each exec is a fresh bubblewrap run under the sandbox's policy
 * (or a tighter one), with its own way out through the egress gateway, recorded in that exec's result.
 */
let servers: LoopbackServers
let execgate: Execgate
let root: string
let sandbox: Sandbox

beforeAll(async () => {
  servers = await startLoopbackServers()
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-egress-sandbox-'))
  const gateway = new EgressGateway({
    resolver: tableResolver({ 'api.example.test': '127.0.0.1', 'other.example.test': '127.0.0.1' }),
    allowPrivateRanges: ['127.0.0.0/8'],
  })
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['process'] },
      adapters: { process: { persistentDir: root } },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: {
        defaultPolicy: {
          wallTimeMs: 15_000,
          cpuTimeMs: 15_000,
          memoryMb: 512,
          network: ['*.example.test:*'],
          allowedImports: ['urllib', 'json', 'socket', 'os'],
        },
      },
    },
    modules: [new ContainerModule(({ rebindSync }) => void rebindSync(tokens.EgressGateway).toConstantValue(gateway))],
  })
  sandbox = await execgate.sandboxes.start({
    adapter: 'process',
    policy: { network: [`api.example.test:${servers.http.port}`] },
  })
}, 60_000)
afterAll(async () => {
  await sandbox?.stop()
  await execgate?.dispose()
  await servers?.close()
  fs.rmSync(root, { recursive: true, force: true })
})

const fetchBoth = `import urllib.request, urllib.error
out = []
for host in ['api', 'other']:
    try:
        out.append(urllib.request.urlopen('http://' + host + '.example.test:${'${PORT}'}/hello').read().decode())
    except urllib.error.HTTPError as e:
        out.append(e.code)
open('last.txt', 'w').write(repr(out))
out`

test("each exec reaches what the sandbox's rules allow, through the gateway, recorded in its own result", async () => {
  const code = fetchBoth.replace('${PORT}', String(servers.http.port))
  const first = await sandbox.exec({ language: 'python', code })
  expect(first).toMatchObject({ status: 'ok', value: ['hello from loopback', 403] })
  expect(first.egress?.map((record) => [record.host, record.decision])).toEqual([
    ['api.example.test', 'allowed'],
    ['other.example.test', 'denied'],
  ])
  // The workspace is kept between execs; the network is each exec's own.
  const second = await sandbox.exec({ language: 'python', code: `open('last.txt').read()` })
  expect(second).toMatchObject({ status: 'ok', value: "['hello from loopback', 403]" })
  expect(second.egress).toEqual([])
}, 60_000)

test("an exec may tighten the sandbox's network to none, and then has no way out", async () => {
  const result = await sandbox.exec({
    language: 'python',
    policy: { network: 'none' },
    code: `import socket, os
try:
    socket.create_connection(('127.0.0.1', 3128), timeout=2)
    r = 'connected'
except OSError as e:
    r = type(e).__name__
[r, os.environ.get('HTTP_PROXY')]`,
  })
  expect(result).toMatchObject({ status: 'ok', value: [expect.stringMatching(/Error$/), null] })
  expect(result.egress).toBeUndefined()
}, 60_000)

test("an exec cannot loosen the sandbox's network", async () => {
  const result = await sandbox.exec({ language: 'python', policy: { network: ['*.example.test:*'] }, code: '1' })
  expect(result.status).toBe('policy_violation')
  expect(result.message).toMatch(/network/)
}, 60_000)
