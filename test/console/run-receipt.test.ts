import fs from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { generateKeyPairSync } from 'node:crypto'
import type { Page } from 'playwright-core'
import { signEnvelope, keyIdOf } from '../../src/fabric/ledger/receipts/dsse'
import { verifyReceipt } from '../../src/fabric/ledger/receipts/verify-receipt'
import { ACME, GLOBEX, screenshots, startConsole, undocumentedRequests, type ConsoleFixture } from './harness'

/**
 * A run's egress log and signed receipt in the console: a quickjs run reaches one loopback server its policy allows
 * and is refused another; the Run page's result and the run's record page list both requests, and the record page
 * fetches the receipt and the public key and checks the Ed25519 signature in the browser (WebCrypto). A receipt file
 * with one changed byte, or signed by another key, is checked against the server's key and refused with the reason.
 * Headless Chromium against a real server.
 */
let fixture: ConsoleFixture
let allowed: http.Server
let forbidden: http.Server
const portOf = (server: http.Server) => (server.address() as AddressInfo).port

async function listen(body: string): Promise<http.Server> {
  const server = http.createServer((_request, response) => response.end(body))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

beforeAll(async () => {
  allowed = await listen('EUR 1.08')
  forbidden = await listen('never read')
  fixture = await startConsole({
    overrides: {
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`] },
      // Loopback servers play the outside world: the test-only escape from the private-address check.
      security: {
        egress: { allowPrivateRanges: ['127.0.0.0/8'] },
        defaultPolicy: { network: [`127.0.0.1:${portOf(allowed)}`], hostCalls: { maxCount: 20, maxTotalMs: 10_000 } },
      },
    },
  })
}, 90_000)
afterAll(async () => {
  await fixture?.close()
  allowed?.close()
  forbidden?.close()
})
afterEach(() => fixture?.closePages())

async function download(page: Page, click: () => Promise<void>): Promise<{ name: string; text: string }> {
  const [started] = await Promise.all([page.waitForEvent('download'), click()])
  return { name: started.suggestedFilename(), text: fs.readFileSync((await started.path())!, 'utf8') }
}

const rowsOf = (page: Page, within: string) =>
  page
    .locator(`${within} [data-testid=egress-records] tbody tr`)
    .evaluateAll((rows) => rows.map((row: any) => [row.getAttribute('data-decision'), row.textContent.replace(/\s+/g, ' ').trim()]))

test('the egress log on the result and the record, the receipt verified in the browser, a changed receipt refused', async () => {
  const page = await fixture.open({ key: ACME, path: 'run' })
  await page.locator('#run-language option').first().waitFor({ state: 'attached' })
  await page.selectOption('#run-language', 'javascript')
  await page.selectOption('#run-adapter', 'quickjs')
  await page.fill(
    '#run-code',
    [
      `const rate = await http_request('http://127.0.0.1:${portOf(allowed)}/rates')`,
      'let refused = ""',
      `try { await http_request('http://127.0.0.1:${portOf(forbidden)}/exfiltrate') } catch (e) { refused = 'refused' }`,
      '[rate.body, refused]',
    ].join('\n'),
  )
  await page.click('button[type=submit]')
  await page.locator('.result[data-status=ok]').waitFor({ timeout: 60_000 })
  expect(await page.locator('.result-value pre').textContent()).toContain('EUR 1.08')
  const onResult = await rowsOf(page, '.result')
  expect(onResult.map(([decision]) => decision)).toEqual(['allowed', 'denied'])
  expect(onResult[0]![1]).toContain(`GET http://127.0.0.1:${portOf(allowed)}/rates`)
  expect(onResult[0]![1]).toContain('200')
  expect(onResult[1]![1]).toContain(`127.0.0.1:${portOf(forbidden)}`)
  expect(onResult[1]![1]).toContain('no network rule allows')
  expect(await page.locator('.result [data-testid=egress-records] caption').textContent()).toContain(
    '2 requests through the egress gateway, 1 refused',
  )

  // The run's record page: the same two lines from the ledger, and the receipt checked against the server's key.
  const runId = await page.locator('[data-testid=run-link] code').textContent()
  await page.click('[data-testid=run-link]')
  await page.locator('[data-testid=receipt-check]').waitFor()
  expect((await rowsOf(page, '.run-record')).map(([decision]) => decision)).toEqual(['allowed', 'denied'])
  const key = await fixture.call('GET', '/v1/ledger/public-key')
  const check = page.locator('[data-testid=receipt-check]')
  expect(await check.getAttribute('data-ok')).toBe('true')
  expect(await check.textContent()).toContain(`signed by the server's key ${key.keyid.slice(0, 16)}`)
  expect(await page.locator('[data-testid=receipt-subjects] li').allTextContents()).toEqual(
    expect.arrayContaining([expect.stringContaining('stdout'), expect.stringContaining('value')]),
  )
  expect((await rowsOf(page, '[data-testid=receipt]')).map(([decision]) => decision)).toEqual(['allowed', 'denied'])
  await screenshots(page, 'run-receipt')

  // What the page offers for download is the server's receipt, and it verifies offline with the downloaded key.
  const receipt = await download(page, () => page.click('button:text-is("Download receipt")'))
  const publicKey = await download(page, () => page.click('button:text-is("Download public key")'))
  expect(receipt.name).toBe(`receipt-${runId}.json`)
  const envelope = JSON.parse(receipt.text)
  expect(envelope).toEqual(await fixture.call('GET', `/v1/runs/${runId}/receipt`))
  const offline = verifyReceipt(envelope, publicKey.text)
  expect(offline).toMatchObject({ ok: true, keyid: key.keyid })
  expect(await check.textContent()).toContain((offline as { payloadSha256: string }).payloadSha256.slice(0, 16))

  // One changed byte of the payload: the signature no longer holds.
  const payload = Buffer.from(envelope.payload, 'base64').toString('utf8').replace('"status":"ok"', '"status":"ko"')
  const changed = { ...envelope, payload: Buffer.from(payload).toString('base64') }
  await page.setInputFiles('#receipt-file', {
    name: 'changed.json',
    mimeType: 'application/json',
    buffer: Buffer.from(JSON.stringify(changed)),
  })
  const fileCheck = page.locator('[data-testid=receipt-file-check]')
  await fileCheck.waitFor()
  expect(await fileCheck.getAttribute('data-ok')).toBe('false')
  expect(await fileCheck.textContent()).toContain(
    `no signature verifies with key ${key.keyid}: the payload, its type or the signature was changed`,
  )

  // The same statement signed by a key that is not the server's.
  const other = generateKeyPairSync('ed25519')
  const forged = signEnvelope(envelope.payloadType, Buffer.from(envelope.payload, 'base64'), other.privateKey, keyIdOf(other.publicKey))
  await page.setInputFiles('#receipt-file', {
    name: 'forged.json',
    mimeType: 'application/json',
    buffer: Buffer.from(JSON.stringify(forged)),
  })
  await page.locator('[data-testid=receipt-file-check]:has-text("another key")').waitFor()
  expect(await fileCheck.textContent()).toContain(`the receipt names key ${keyIdOf(other.publicKey)} (signed with another key)`)

  // The untouched receipt, sent back as a file, verifies.
  await page.setInputFiles('#receipt-file', { name: 'receipt.json', mimeType: 'application/json', buffer: Buffer.from(receipt.text) })
  await page.locator('[data-testid=receipt-file-check][data-ok=true]').waitFor()

  expect(await undocumentedRequests(fixture)).toEqual([])
  expect(fixture.problems).toEqual([])
}, 120_000)

test("another tenant's run: one refusal from the server, and no receipt asked for", async () => {
  const run = await fixture.call('POST', '/v1/executions', { language: 'javascript', code: '1 + 1', adapter: 'quickjs' }, GLOBEX)
  expect(run.runId).toBeTruthy()
  fixture.requests.clear()
  const page = await fixture.open({ key: ACME, path: `runs/${run.runId}` })
  await page.locator('.error-message[role=alert]').waitFor()
  expect(await page.locator('.error-message[role=alert]').allInnerTexts()).toEqual([
    expect.stringContaining(`no run "${run.runId}" for tenant acme (EXECGATE_NOT_FOUND)`),
  ])
  expect(await page.locator('#receipt-title').count()).toBe(0)
  expect(fixture.requests.has(`GET /v1/runs/${run.runId}/receipt`)).toBe(false)
  expect(fixture.problems).toEqual([])
}, 60_000)
