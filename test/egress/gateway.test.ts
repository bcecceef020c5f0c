import { EgressGateway, tableResolver, type EgressRunHandle } from '../../src/egress'
import { connectVia, httpsOverTunnel, viaProxy } from './proxy-client'
import { startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * The gateway's forward proxy against real loopback servers, reached through each run's own unix socket as an OS
 * sandbox reaches it. Names resolve through a table (api.example.test → 127.0.0.1), loopback is exempted with
 * `allowPrivateRanges` except where a test checks that it is refused without it.
 */
let servers: LoopbackServers
beforeAll(async () => {
  servers = await startLoopbackServers()
})
afterAll(() => servers.close())

const resolver = () =>
  tableResolver({
    'api.example.test': '127.0.0.1',
    'other.example.test': '127.0.0.1',
    'metadata.example.test': '169.254.169.254',
    'inside.example.test': '10.1.2.3',
  })
const handles: EgressRunHandle[] = []
const gateways: EgressGateway[] = []
afterEach(async () => {
  for (const handle of handles.splice(0)) handle.close()
  for (const gateway of gateways.splice(0)) await gateway.dispose()
})

async function openRun(
  network: string[],
  options: ConstructorParameters<typeof EgressGateway>[0] = {},
): Promise<{ handle: EgressRunHandle; socket: string }> {
  const gateway = new EgressGateway({ resolver: resolver(), allowPrivateRanges: ['127.0.0.0/8'], ...options })
  gateways.push(gateway)
  const handle = gateway.openRun(network)
  handles.push(handle)
  return { handle, socket: (await handle.endpoint()).socketPath }
}

test('an allowed GET goes through, and the run records it', async () => {
  const { handle, socket } = await openRun([`api.example.test:${servers.http.port}`])
  const answer = await viaProxy(socket, `http://api.example.test:${servers.http.port}/hello?q=1`)
  expect(answer).toMatchObject({ status: 200, body: 'hello from loopback' })
  expect(handle.records()).toEqual([
    expect.objectContaining({
      method: 'GET',
      host: 'api.example.test',
      port: servers.http.port,
      url: `http://api.example.test:${servers.http.port}/hello`,
      status: 200,
      decision: 'allowed',
      rule: `api.example.test:${servers.http.port}`,
      bytesIn: 19,
      bytesOut: 0,
    }),
  ])
})

test('a host no rule allows gets a 403 naming the rules, and a denied line in the record', async () => {
  const { handle, socket } = await openRun([`api.example.test:${servers.http.port}`])
  const answer = await viaProxy(socket, `http://other.example.test:${servers.http.port}/hello`)
  expect(answer.status).toBe(403)
  expect(answer.headers['x-execgate-egress']).toBe('denied')
  expect(answer.body).toContain(`no network rule allows other.example.test:${servers.http.port}`)
  expect(answer.body).toContain('rule: deny by default')
  expect(handle.records()[0]).toMatchObject({ decision: 'denied', host: 'other.example.test', status: 403, rule: 'deny by default' })
  expect(servers.seen.some((request) => request.headers.host?.startsWith('other.example.test'))).toBe(false)
})

test('without allowPrivateRanges loopback is refused, by name and by address', async () => {
  const { handle, socket } = await openRun(['*:*'], { allowPrivateRanges: [] })
  for (const url of [
    `http://api.example.test:${servers.http.port}/hello`,
    `http://127.0.0.1:${servers.http.port}/hello`,
    `http://[::ffff:127.0.0.1]:${servers.http.port}/hello`,
  ]) {
    const answer = await viaProxy(socket, url)
    expect(answer.status).toBe(403)
    expect(answer.body).toMatch(/loopback 127\.0\.0\.0\/8/)
  }
  expect(handle.records().every((record) => record.decision === 'denied' && record.rule === 'private address')).toBe(true)
})

test('a name resolving to a private or metadata address is refused even under an allow-all rule', async () => {
  const { socket } = await openRun(['*:*'])
  expect((await viaProxy(socket, 'http://metadata.example.test/latest/meta-data/')).body).toMatch(
    /169\.254\.169\.254 is in a link-local \(cloud metadata\)/,
  )
  expect((await viaProxy(socket, 'http://inside.example.test/')).body).toMatch(/10\.1\.2\.3 is in a private 10\.0\.0\.0\/8/)
})

test('CONNECT opens a tunnel for HTTPS with TLS end to end; another port is refused', async () => {
  const { handle, socket } = await openRun([`api.example.test:${servers.https.port}`])
  const tunnel = await connectVia(socket, `api.example.test:${servers.https.port}`)
  expect(tunnel.status).toBe(200)
  expect(await httpsOverTunnel(tunnel.socket!, 'api.example.test', '/hello', servers.caPem)).toEqual({
    status: 200,
    body: 'hello from loopback',
  })
  const refused = await connectVia(socket, 'api.example.test:22')
  expect(refused.status).toBe(403)
  expect(refused.body).toContain('no network rule allows api.example.test:22')
  await new Promise((resolve) => setTimeout(resolve, 50))
  expect(handle.records().map((record) => [record.method, record.port, record.decision])).toEqual(
    expect.arrayContaining([
      ['CONNECT', servers.https.port, 'allowed'],
      ['CONNECT', 22, 'denied'],
    ]),
  )
  expect(handle.records().find((record) => record.decision === 'allowed')!.bytesIn).toBeGreaterThan(100)
})

test('a rule with methods allows only those methods: on plain HTTP, and inside a tunnel the gateway re-terminates', async () => {
  const { handle, socket } = await openRun(
    [`GET,HEAD api.example.test:${servers.http.port}`, `GET api.example.test:${servers.https.port}`],
    {
      extraCa: [servers.caPem],
    },
  )
  expect((await viaProxy(socket, `http://api.example.test:${servers.http.port}/hello`)).status).toBe(200)
  const post = await viaProxy(socket, `http://api.example.test:${servers.http.port}/echo`, { method: 'POST', body: 'x' })
  expect(post.status).toBe(403)
  expect(post.body).toContain('allows GET,HEAD')
  // HTTPS: the tunnel is opened, but as the gateway's own TLS (the run's endpoint names the CA to trust), so each
  // request's method is read and checked; a blind tunnel would have hidden it.
  const { caCertificatePem } = await handle.endpoint()
  expect(caCertificatePem).toContain('BEGIN CERTIFICATE')
  const getTunnel = await connectVia(socket, `api.example.test:${servers.https.port}`)
  expect(getTunnel.status).toBe(200)
  expect(await httpsOverTunnel(getTunnel.socket!, 'api.example.test', '/hello', caCertificatePem!)).toEqual({
    status: 200,
    body: 'hello from loopback',
  })
  const postTunnel = await connectVia(socket, `api.example.test:${servers.https.port}`)
  const refused = await httpsOverTunnel(postTunnel.socket!, 'api.example.test', '/echo', caCertificatePem!, { method: 'POST', body: 'x' })
  expect(refused.status).toBe(403)
  expect(refused.body).toContain(
    `no rule allows POST to api.example.test:${servers.https.port}: rule "GET api.example.test:${servers.https.port}" allows GET`,
  )
  await new Promise((resolve) => setTimeout(resolve, 50))
  expect(
    handle
      .records()
      .filter((record) => record.port === servers.https.port)
      .map((record) => [record.method, record.url, record.decision]),
  ).toEqual([
    ['GET', `https://api.example.test:${servers.https.port}/hello`, 'allowed'],
    ['POST', `https://api.example.test:${servers.https.port}/echo`, 'denied'],
  ])
  // Where the gateway cannot re-terminate, a CONNECT under a rule naming methods is refused, saying why.
  const blind = await handle.run.authorise(undefined, 'api.example.test', servers.https.port)
  expect(blind).toMatchObject({
    ok: false,
    status: 403,
    reason: expect.stringContaining(
      'names methods, and the methods inside a tunnel whose TLS the gateway does not re-terminate cannot be seen',
    ),
  })
})

test('caps: requests, bytes in, and an upstream that never answers', async () => {
  const { handle, socket } = await openRun([`api.example.test:${servers.http.port}`], {
    caps: { maxRequests: 3, maxBytesIn: 2000, maxConnectionMs: 300 },
  })
  const big = await viaProxy(socket, `http://api.example.test:${servers.http.port}/big?bytes=100000`).catch((error: Error) => ({
    status: -1,
    body: error.message,
  }))
  expect(big.body.length).toBeLessThan(100000)
  const hang = await viaProxy(socket, `http://api.example.test:${servers.http.port}/hang`)
  expect(hang.status).toBe(504)
  expect(hang.body).toContain('maxConnectionMs')
  await viaProxy(socket, `http://api.example.test:${servers.http.port}/hello`).catch(() => undefined)
  const fourth = await viaProxy(socket, `http://api.example.test:${servers.http.port}/hello`)
  expect(fourth.status).toBe(403)
  expect(fourth.body).toContain('maxRequests')
  const reasons = handle.records().map((record) => record.reason ?? '')
  expect(reasons.some((reason) => reason.includes('maxBytesIn'))).toBe(true)
  expect(reasons.some((reason) => reason.includes('maxConnectionMs'))).toBe(true)
})

test('a secret is added to requests to its host only, and scrubbed from what comes back', async () => {
  const { socket } = await openRun([`*.example.test:${servers.http.port}`], {
    secrets: { weather: { env: 'WEATHER_TOKEN', hosts: [`api.example.test:${servers.http.port}`] } },
    environment: { WEATHER_TOKEN: 'tok-s3cr3t-value' },
  })
  const mine = await viaProxy(socket, `http://api.example.test:${servers.http.port}/headers`, { headers: { 'x-trace': 'one' } })
  expect(servers.seen.at(-1)!.headers.authorization).toBe('Bearer tok-s3cr3t-value')
  expect(mine.body).not.toContain('tok-s3cr3t-value')
  expect(JSON.parse(mine.body).authorization).toBe(`Bearer ${'*'.repeat('tok-s3cr3t-value'.length)}`)
  expect((await viaProxy(socket, `http://other.example.test:${servers.http.port}/headers`)).status).toBe(200)
  expect(servers.seen.at(-1)!.headers.host).toBe(`other.example.test:${servers.http.port}`)
  expect(servers.seen.at(-1)!.headers.authorization).toBeUndefined()
})

test("a closed run's socket is gone and its connections are cut", async () => {
  const { handle, socket } = await openRun([`api.example.test:${servers.http.port}`])
  handle.close()
  await expect(viaProxy(socket, `http://api.example.test:${servers.http.port}/hello`)).rejects.toThrow(/ENOENT|ECONNREFUSED/)
})
