import { ContainerModule } from 'inversify'
import { createExecgate, tokens, type Execgate } from '../../../src'
import { EgressGateway, tableResolver } from '../../../src/egress'
import { verifyReceipt } from '../../../src/fabric/ledger/receipts/verify-receipt'
import { startLoopbackServers, type LoopbackServers } from '../../egress/loopback-servers'

/**
 * A run's network in its ledger record, provenance and signed receipt: real loopback servers as the allowed host,
 * the real egress gateway, quickjs's `http_request`. The record keeps `result.egress`; PROV-JSON names each host
 * reached as an entity the run used (role `egress`); the receipt's predicate carries the same log, signed.
 */
let servers: LoopbackServers
let execgate: Execgate

beforeAll(async () => {
  servers = await startLoopbackServers()
  const gateway = new EgressGateway({
    resolver: tableResolver({ 'api.example.test': '127.0.0.1' }),
    allowPrivateRanges: ['127.0.0.0/8'],
    extraCa: [servers.caPem],
  })
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: { defaultPolicy: { network: [`api.example.test:${servers.https.port}`], hostCalls: { maxCount: 10, maxTotalMs: 10_000 } } },
    },
    modules: [new ContainerModule(({ rebindSync }) => void rebindSync(tokens.EgressGateway).toConstantValue(gateway))],
  })
}, 30_000)
afterAll(async () => {
  await execgate?.dispose()
  await servers?.close()
})

test('the hosts a run reached are in its record, its PROV-JSON and its signed receipt; refusals are counted', async () => {
  const url = `${servers.https.url}/hello`
  const result = await execgate.execute({
    language: 'javascript',
    code:
      `const a = await http_request('${url}'); const b = await http_request('${url}'); let ` +
      `refused = ''; try { await http_request('http://evil.test:81/') } catch (e) { refused = ` +
      `'refused' } [a.status, b.status, refused]`,
  })
  expect(result).toMatchObject({ status: 'ok', value: [200, 200, 'refused'] })
  expect(result.egress).toHaveLength(3)

  const { record } = await execgate.ledger.record(result.runId!)
  expect(record.egress).toEqual(result.egress)

  const prov = await execgate.ledger.provenance(result.runId!)
  const host = `host:api.example.test:${servers.https.port}`
  expect(prov.entity[host]).toMatchObject({
    'prov:type': { $: 'execgate:Host' },
    'execgate:host': 'api.example.test',
    'execgate:port': servers.https.port,
  })
  expect(Object.keys(prov.entity).filter((id) => id.startsWith('host:'))).toEqual([host]) // the refused host was never reached
  const used = Object.values(prov.used).find((relation) => relation['prov:entity'] === host)
  expect(used).toMatchObject({
    'prov:activity': `run:${result.runId}`,
    'prov:role': 'egress',
    'execgate:requests': 2,
    'execgate:bytesIn': 2 * 19,
  })
  expect(prov.activity[`run:${result.runId}`]).toMatchObject({ 'execgate:egressRequests': 3, 'execgate:egressDenied': 1 })

  const verified = verifyReceipt(await execgate.ledger.receipt(result.runId!), (await execgate.ledger.publicKey()).publicKeyPem)
  if (!verified.ok) throw new Error(verified.reason)
  expect((verified.statement.predicate as { egress: unknown }).egress).toEqual(result.egress)
})
