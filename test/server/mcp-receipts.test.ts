import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { createExecgate, type Execgate } from '../../src'
import type { DsseEnvelope } from '../../src/fabric/ledger/receipts/dsse'
import { verifyReceipt } from '../../src/fabric/ledger/receipts/verify-receipt'
import { createMcpServer } from '../../src/server/mcp'

/**
 * `get_receipt` over MCP, with the real ledger (SQLite) and a real quickjs run: the envelope verifies with the public
 * key the tool gives, names the run's code digest; another tenant's run is not found; a bad call says why.
 */
let execgate: Execgate

beforeAll(async () => {
  execgate = await createExecgate({
    overrides: { execution: { enabled: ['quickjs'] }, readiness: { enabled: false }, log: { level: 'silent' } },
  })
}, 60_000)
afterAll(() => execgate?.dispose())

async function clientFor(tenant?: string): Promise<Client> {
  const server = await createMcpServer(execgate, undefined, undefined, tenant)
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  await server.connect(serverSide)
  const client = new Client({ name: 'receipt-test', version: '1.0.0' })
  await client.connect(clientSide)
  return client
}

test("a run's receipt through get_receipt verifies offline with the key it comes with", async () => {
  const client = await clientFor('acme')
  const ran = await client.callTool({ name: 'execute_code', arguments: { language: 'javascript', code: '6 * 7' } })
  const runId = (ran.structuredContent as { runId: string }).runId
  expect(runId).toBeTruthy()
  const answer = await client.callTool({ name: 'get_receipt', arguments: { runId } })
  expect(answer.content).toEqual([expect.objectContaining({ text: expect.stringContaining('signed receipt') })])
  expect(answer.isError).toBeFalsy()
  const { envelope, publicKey } = answer.structuredContent as { envelope: DsseEnvelope; publicKey: { publicKeyPem: string; keyid: string } }
  expect((answer.content as { text: string }[])[0]!.text).toContain(`signed receipt of run ${runId}`)
  const verified = verifyReceipt(envelope, publicKey.publicKeyPem)
  expect(verified).toMatchObject({ ok: true, kind: 'run', keyid: publicKey.keyid })
  // A changed byte fails, with a reason.
  const tampered = {
    ...envelope,
    payload: Buffer.from(Buffer.from(envelope.payload, 'base64').toString('utf8').replace('quickjs', 'quickjz')).toString('base64'),
  }
  expect(verifyReceipt(tampered, publicKey.publicKeyPem)).toMatchObject({ ok: false })
  await client.close()

  const other = await clientFor('globex')
  const hidden = await other.callTool({ name: 'get_receipt', arguments: { runId } })
  expect(hidden.isError).toBe(true)
  expect((hidden.content as { text: string }[])[0]!.text).toMatch(/not found|no run/i)
  const bad = await other.callTool({ name: 'get_receipt', arguments: {} })
  expect(bad).toMatchObject({ isError: true, content: [{ text: 'give exactly one of runId or planId' }] })
  await other.close()
}, 60_000)
