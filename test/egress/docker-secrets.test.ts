import { ContainerModule } from 'inversify'
import { DockerAdapter } from '../../adapters/docker'
import { createExecgate, tokens, type Execgate } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * HTTPS with a secret on the docker tier, as test/egress/tls-retermination.test.ts does on process: the gateway
 * re-terminates the container's TLS to the secret's host (the container trusts the gateway's CA through the bundle
 * bound at /run/execgate/ca-bundle.pem), adds the header, and verifies the real upstream. The code never has the
 * value: it searches everything it can read for it — its environment, every visible process's environment and command
 * line, the files under /run/execgate, the upstream's echo of the request — and finds nothing. Output scrubbing would
 * hide a leak from the result, so the code searches for the token itself (passed in reversed) and reports booleans.
 * Real podman; a real HTTPS server on loopback with a certificate of the test's own CA.
 */
const SOCKET = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'
const TOKEN = 'sk-docker-tls-0123456789abcdef'
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
    extraCa: [servers.caPem],
    secrets: { api: { env: 'API_TOKEN', hosts: [`api.example.test:${servers.https.port}`] } },
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
          // The probe reads files (its own /proc, /run/execgate): the static check refuses open() without filesystem access.
          filesystem: 'read_only',
          network: [`api.example.test:${servers.https.port}`, `127.0.0.1:${servers.https.port}`],
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

/** Python that fetches the secret host's echo of its request, then looks for the token everywhere it can read. */
const probe = () => `import urllib.request, json, os
needle = ${JSON.stringify([...TOKEN].reverse().join(''))}[::-1]
body = urllib.request.urlopen('https://api.example.test:${servers.https.port}/headers').read().decode()
def readable(path):
    try:
        with open(path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')
    except OSError:
        return ''
processes = [p for p in os.listdir('/proc') if p.isdigit()]
found = {
    'response': needle in body,
    'environment': any(needle in value for value in os.environ.values()),
    'processes': any(needle in readable('/proc/' + p + '/environ') + readable('/proc/' + p + '/cmdline') for p in processes),
    'files': any(needle in readable('/run/execgate/' + name) for name in os.listdir('/run/execgate')),
}
[json.loads(body).get('authorization'), found, len(processes) > 1, os.environ.get('SSL_CERT_FILE')]`

const masked = `Bearer ${'*'.repeat(TOKEN.length)}`
const nowhere = { response: false, environment: false, processes: false, files: false }

test('a one-off run: the header reaches the upstream, the code finds the token nowhere it can read', async () => {
  const before = servers.seen.length
  const result = await execgate.execute({ language: 'python', adapter: 'docker', code: probe() })
  expect(result).toMatchObject({ status: 'ok', value: [masked, nowhere, true, '/run/execgate/ca-bundle.pem'] })
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
}, 60_000)

test("the image's Node 18 fetch over HTTPS to the secret host gets the header too, masked in what comes back", async () => {
  const before = servers.seen.length
  const result = await execgate.execute({
    language: 'javascript',
    adapter: 'docker',
    code: `fetch('https://api.example.test:${servers.https.port}/headers').then(async (r) => [r.status, (await r.json()).authorization])`,
  })
  expect(result).toMatchObject({ status: 'ok', value: [200, masked] })
  expect(servers.seen.slice(before).map((request) => request.headers.authorization)).toEqual([`Bearer ${TOKEN}`])
}, 60_000)

test('a host the secret is not for is a blind tunnel: TLS end to end, and no header', async () => {
  const before = servers.seen.length
  const result = await execgate.execute({
    language: 'python',
    adapter: 'docker',
    code: `import urllib.request, ssl, json
context = ssl.create_default_context(cadata=${JSON.stringify(servers.caPem)})
context.check_hostname = False  # the test server's certificate names api.example.test; its chain is still verified
json.loads(
    urllib.request.urlopen('https://127.0.0.1:${servers.https.port}/headers', context=context).read().decode()
).get('authorization', 'none')`,
  })
  expect(result).toMatchObject({ status: 'ok', value: 'none' })
  expect(servers.seen.slice(before).map((request) => request.headers.authorization)).toEqual([undefined])
  expect(result.egress).toEqual([expect.objectContaining({ method: 'CONNECT', host: '127.0.0.1', decision: 'allowed' })])
}, 60_000)

test("a persistent docker sandbox's exec: the same re-termination through the sandbox's folder, the token nowhere", async () => {
  const sandbox = await execgate.sandboxes.start({ adapter: 'docker' })
  try {
    const before = servers.seen.length
    const result = await sandbox.exec({ language: 'python', code: probe() })
    expect(result).toMatchObject({ status: 'ok', value: [masked, nowhere, true, '/run/execgate/ca-bundle.pem'] })
    expect(servers.seen.slice(before).map((request) => request.headers.authorization)).toEqual([`Bearer ${TOKEN}`])
    expect(JSON.stringify(result)).not.toContain(TOKEN)
  } finally {
    await sandbox.stop()
  }
}, 90_000)
