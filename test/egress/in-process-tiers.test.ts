import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ContainerModule } from 'inversify'
import { createExecgate, tokens, type Execgate, type ExecutionResult } from '../../src'
import { EgressGateway, tableResolver } from '../../src/egress'
import { BINARY_BODY, startLoopbackServers, type LoopbackServers } from './loopback-servers'

/**
 * quickjs and monty reach the network only through `http_request`, answered by the egress gateway under the
 * policy's rules: real loopback servers play the allowed and forbidden hosts.
 */
let servers: LoopbackServers
let execgate: Execgate
let dataDir: string | undefined
const TOKEN = 'sk-live-abcdef123456'

beforeAll(async () => {
  servers = await startLoopbackServers()
  const gateway = new EgressGateway({
    resolver: tableResolver({
      'api.example.test': '127.0.0.1',
      'other.example.test': '127.0.0.1',
      'rebind.example.test': { answers: [['127.0.0.1'], ['169.254.169.254']] },
    }),
    allowPrivateRanges: ['127.0.0.0/8'],
    extraCa: [servers.caPem],
    secrets: { api: { env: 'API_TOKEN', hosts: [`api.example.test:${servers.https.port}`] } },
    environment: { API_TOKEN: TOKEN },
  })
  execgate = await createExecgate({
    overrides: {
      fabric: { dataDir: (dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-egress-ledger-'))) },
      execution: { enabled: ['quickjs', 'monty'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: {
        defaultPolicy: {
          network: [`*.example.test:${servers.https.port}`, `*.example.test:${servers.http.port}`, '*:80'],
          hostCalls: { maxCount: 100, maxTotalMs: 10_000 },
        },
      },
    },
    modules: [new ContainerModule(({ rebindSync }) => void rebindSync(tokens.EgressGateway).toConstantValue(gateway))],
  })
}, 30_000)
afterAll(async () => {
  await execgate?.dispose()
  await servers?.close()
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
})

const js = (code: string, network?: string[]) =>
  execgate.execute({ language: 'javascript', code, adapter: 'quickjs', ...(network ? { policy: { network } } : {}) })
const py = (code: string) => execgate.execute({ language: 'python', code, adapter: 'monty' })

test('quickjs: an HTTPS GET through the gateway, recorded in result.egress', async () => {
  const result = await js(`const r = await http_request('${servers.https.url}/hello'); [r.status, r.body]`)
  expect(result).toMatchObject({ status: 'ok', value: [200, 'hello from loopback'] })
  expect(result.egress).toEqual([
    expect.objectContaining({
      method: 'GET',
      host: 'api.example.test',
      port: servers.https.port,
      status: 200,
      decision: 'allowed',
      bytesIn: 19,
    }),
  ])
})

test("quickjs: responseType 'base64' answers a binary body's exact bytes; bodyEncoding 'base64' uploads bytes", async () => {
  const base = `http://api.example.test:${servers.http.port}`
  const upload = Buffer.from([0, 255, 128, 10, 13, 0xc3]).toString('base64')
  const result = await js(`const down = await http_request('${base}/bytes', { responseType: 'base64' })
const up = await http_request('${base}/echo-bytes', { method: 'POST', body: '${upload}', bodyEncoding: 'base64', responseType: 'base64' })
;[down.body, up.body]`)
  expect(result).toMatchObject({ status: 'ok', value: [BINARY_BODY.toString('base64'), upload] })
  expect(result.egress?.map((record) => [record.bytesIn, record.bytesOut])).toEqual([
    [1024, 0],
    [6, 6],
  ])
})

test('monty: the same request from Python', async () => {
  const result = await py(`r = http_request('${servers.https.url}/hello')\n[r['status'], r['body']]`)
  expect(result).toMatchObject({ status: 'ok', value: [200, 'hello from loopback'] })
  expect(result.egress?.[0]).toMatchObject({ decision: 'allowed', status: 200 })
})

test('a refused request is an error inside the code, naming the rule, and a denied line', async () => {
  const result = await js(`try { await http_request('http://evil.test:81/x') } catch (e) { e.message }`)
  expect(result.status).toBe('ok')
  expect(result.value).toMatch(/network request refused: no network rule allows evil\.test:81 .*deny by default/)
  expect(result.egress).toEqual([expect.objectContaining({ host: 'evil.test', decision: 'denied', rule: 'deny by default' })])
  const python = await py(`http_request('http://169.254.169.254/latest/meta-data/')`)
  expect(python.status).toBe('error')
  expect(python.error?.message).toMatch(/network request refused/)
})

test('a redirect to a private address is checked again and refused', async () => {
  for (const target of [
    'http://169.254.169.254/latest/',
    'http://[::ffff:169.254.169.254]/',
    'http://2852039166/',
    'http://0251.0376.0251.0376/',
  ]) {
    const result = await js(
      `try { await http_request('${servers.https.url}/redirect?to=${encodeURIComponent(target)}'); 'followed' } catch (e) { e.message }`,
    )
    expect(result.value).toMatch(/refused: .*169\.254\.169\.254\)? is in a link-local/)
    expect(result.egress?.map((record) => record.decision)).toEqual(['allowed', 'denied'])
  }
})

test('DNS that changes between lookups: each request checks the answer it connects to', async () => {
  const result = await js(`
    const first = await http_request('http://rebind.example.test:${servers.http.port}/hello')
    let second
    try { second = await http_request('http://rebind.example.test:${servers.http.port}/hello') } catch (e) { second = e.message }
    [first.status, second]`)
  expect(result.value).toEqual([200, expect.stringMatching(/169\.254\.169\.254 is in a link-local/)])
})

test('the secret goes to its host only; the code never sees it', async () => {
  const mine: ExecutionResult = await js(`const r = await http_request('${servers.https.url}/headers'); JSON.parse(r.body).authorization`)
  expect(servers.seen.at(-1)!.headers.authorization).toBe(`Bearer ${TOKEN}`)
  expect(mine.value).toBe(`Bearer ${'*'.repeat(TOKEN.length)}`)
  await js(`await http_request('http://other.example.test:${servers.http.port}/headers')`)
  expect(servers.seen.at(-1)!.headers.authorization).toBeUndefined()
  const printed = await py(`r = http_request('${servers.https.url}/headers')\nprint(r['body'])`)
  expect(printed.stdout).not.toContain(TOKEN)
})

test('a download past the byte cap is cut; a run without network has no http_request', async () => {
  const big = await js(
    `try { await http_request('http://api.example.test:${servers.http.port}/big?bytes=20000000'); 'all' } catch (e) { e.message }`,
  )
  expect(big.value).toMatch(/maxBytesIn/)
  const none = await execgate.execute({
    language: 'javascript',
    code: 'typeof http_request',
    adapter: 'quickjs',
    policy: { network: 'none' },
  })
  expect(none).toMatchObject({ status: 'ok', value: 'undefined' })
  expect(none.egress).toBeUndefined()
})

test('the hosts a run reached are PROV entities of its ledger record; refused ones are counted', async () => {
  const result = await js(
    `await http_request('${servers.https.url}/hello'); await ` +
      `http_request('${servers.https.url}/hello'); try { await ` +
      `http_request('http://evil.test:81/') } catch {} 1`,
  )
  expect(result.status).toBe('ok')
  const prov = await execgate.ledger.provenance(result.runId!)
  const host = `host:api.example.test:${servers.https.port}`
  expect(prov.entity[host]).toEqual({
    'prov:type': { $: 'execgate:Host', type: 'xsd:QName' },
    'prov:label': `api.example.test:${servers.https.port}`,
    'execgate:host': 'api.example.test',
    'execgate:port': servers.https.port,
  })
  expect(Object.values(prov.used)).toEqual(
    expect.arrayContaining([
      {
        'prov:activity': `run:${result.runId}`,
        'prov:entity': host,
        'prov:role': 'egress',
        'execgate:requests': 2,
        'execgate:bytesIn': 38,
        'execgate:bytesOut': 0,
      },
    ]),
  )
  expect(prov.activity[`run:${result.runId}`]).toMatchObject({ 'execgate:egressDenied': 1, 'execgate:egressRequests': 3 })
  expect((await execgate.ledger.record(result.runId!)).record).toMatchObject({
    egress: [
      expect.objectContaining({ decision: 'allowed' }),
      expect.objectContaining({ decision: 'allowed' }),
      expect.objectContaining({ decision: 'denied', host: 'evil.test' }),
    ],
  })
})
