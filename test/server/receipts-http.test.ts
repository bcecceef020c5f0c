import { spawnSync } from 'node:child_process'
import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { preAuthEncoding } from '../../src/fabric/ledger/receipts/dsse'
import { verifyReceipt } from '../../src/fabric/ledger/receipts/verify-receipt'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, GLOBEX, httpCaller } from '../servers/http-caller'

/**
 * Signed run receipts over real HTTP on loopback, with the real SQLite ledger: the envelope is checked with this
 * file's own PAE and node:crypto (not execgate's verifier), then with execgate's verifier and the built CLI, offline.
 * A changed byte, another key, another tenant: each fails, with a reason.
 */

const root = path.join(__dirname, '..', '..')
let execgate: Execgate
let server: RunningServer
const call = httpCaller(() => server.url)

beforeAll(async () => {
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      security: { profiles: { files: { filesystem: 'sandboxed' } } },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`], tenants: { acme: { profile: 'files' }, globex: { profile: 'files' } } },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 60_000)
afterAll(async () => {
  await server.shutdown()
})

const sha = (data: string | Buffer) => createHash('sha256').update(data).digest('hex')

/** DSSE v1's PAE written out here from the spec's text, independently of src/fabric/ledger/receipts/dsse.ts. */
function pae(payloadType: string, payload: Buffer): Buffer {
  const header = `DSSEv1 ${Buffer.byteLength(payloadType, 'utf8')} ${payloadType} ${payload.byteLength} `
  return Buffer.concat([Buffer.from(header, 'utf8'), payload])
}

test("PAE matches the DSSE spec's worked example, byte for byte", () => {
  const expected = 'DSSEv1 29 http://example.com/HelloWorld 11 hello world'
  expect(preAuthEncoding('http://example.com/HelloWorld', Buffer.from('hello world')).toString()).toBe(expected)
  expect(pae('http://example.com/HelloWorld', Buffer.from('hello world')).toString()).toBe(expected)
  // Lengths are of UTF-8 bytes, not of UTF-16 code units.
  expect(preAuthEncoding('t', Buffer.from('é')).toString()).toBe('DSSEv1 1 t 2 é')
})

test("a run's receipt: an in-toto Statement in a DSSE envelope, signed with the server's Ed25519 key, verified independently", async () => {
  const code = "await write_file('total.csv', 'total\\n42\\n'); 42"
  const run = await call('/v1/executions', { key: ACME, body: { language: 'javascript', code } })
  expect(run.json).toMatchObject({ status: 'ok', runId: expect.any(String) })
  const runId = run.json.runId as string

  const keyAnswer = await call('/v1/ledger/public-key', { key: ACME })
  expect(keyAnswer.json).toMatchObject({
    algorithm: 'ed25519',
    keyid: expect.stringMatching(/^[0-9a-f]{64}$/),
    publicKeyPem: expect.stringContaining('BEGIN PUBLIC KEY'),
  })
  const publicKey = createPublicKey(keyAnswer.json.publicKeyPem)
  expect(sha(publicKey.export({ format: 'der', type: 'spki' }))).toBe(keyAnswer.json.keyid)
  const pem = await call('/v1/ledger/public-key', { key: ACME, headers: { accept: 'application/x-pem-file' } })
  expect(pem.text).toBe(keyAnswer.json.publicKeyPem)
  // Generated into the data directory at first use, readable by its owner only.
  expect(fs.statSync(path.join(execgate.config.fabric.dataDir, 'ledger-signing-key.pem')).mode & 0o777).toBe(0o600)

  const answer = await call(`/v1/runs/${runId}/receipt`, { key: ACME })
  expect(answer.status).toBe(200)
  const envelope = answer.json
  expect(envelope).toMatchObject({
    payloadType: 'application/vnd.in-toto+json',
    signatures: [{ keyid: keyAnswer.json.keyid, sig: expect.any(String) }],
  })
  const payload = Buffer.from(envelope.payload, 'base64')
  expect(verify(null, pae(envelope.payloadType, payload), publicKey, Buffer.from(envelope.signatures[0].sig, 'base64'))).toBe(true)

  const statement = JSON.parse(payload.toString())
  const { record, seq, hash, prevHash } = (await call(`/v1/runs/${runId}/record`, { key: ACME })).json
  expect(statement._type).toBe('https://in-toto.io/Statement/v1')
  expect(statement.predicateType).toBe('https://execgate.dev/receipt/run/v1')
  expect(statement.subject).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ name: 'files/total.csv', digest: { sha256: sha('total\n42\n') } }),
      expect.objectContaining({ name: 'value', digest: { sha256: sha('42') } }),
      expect.objectContaining({ name: 'stdout', digest: { sha256: sha('') } }),
    ]),
  )
  expect(statement.predicate).toMatchObject({
    runId,
    tenant: 'acme',
    status: 'ok',
    adapter: 'quickjs',
    tier: 1,
    language: 'javascript',
    code: { sha256: sha(code), size: Buffer.byteLength(code) },
    egress: [],
    engines: { execgate: expect.any(String), node: process.version, 'quickjs-emscripten': expect.stringMatching(/^\d+\.\d+/) },
    startedAt: record.startedAt,
    endedAt: record.endedAt,
    ledger: { seq, hash, prevHash },
  })
  // The resolved policy itself, whose canonical JSON is what the record's digest names.
  expect(statement.predicate.policy.sha256).toBe(record.policySha256)
  expect(statement.predicate.policy.resolved).toMatchObject({ filesystem: 'sandboxed', network: 'none', allowedImports: expect.any(Array) })

  // Built from the stored record: asked again, the same bytes.
  expect((await call(`/v1/runs/${runId}/receipt`, { key: ACME })).text).toBe(answer.text)
  expect(verifyReceipt(envelope, keyAnswer.json.publicKeyPem)).toMatchObject({ ok: true, kind: 'run', payloadSha256: sha(payload) })

  // Another tenant's run answers exactly like a missing one.
  const foreign = await call(`/v1/runs/${runId}/receipt`, { key: GLOBEX })
  const missing = await call('/v1/runs/00000000-0000-4000-8000-000000000000/receipt', { key: ACME })
  expect([foreign.status, foreign.json.error.code, missing.status]).toEqual([404, 'EXECGATE_NOT_FOUND', 404])
})

test(
  'a changed byte, a swapped payload type, another key: each fails with a reason, in the ' + 'library and the built CLI offline',
  async () => {
    if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'ledger.js')))
      throw new Error('dist/ is missing: run `npm run build` (npm test does)')
    const run = await call('/v1/executions', { key: GLOBEX, body: { language: 'javascript', code: '6 * 7' } })
    const envelope = (await call(`/v1/runs/${run.json.runId}/receipt`, { key: GLOBEX })).json
    const serverKey = (await call('/v1/ledger/public-key', { key: GLOBEX })).json.publicKeyPem as string
    const otherKey = generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString()

    const payload = Buffer.from(envelope.payload, 'base64')
    const changed = Buffer.from(payload)
    const at = changed.indexOf('"status":"ok"') + '"status":"'.length
    changed[at] = 'O'.charCodeAt(0)
    const tampered = { ...envelope, payload: changed.toString('base64') }
    const retyped = { ...envelope, payloadType: 'application/json' }

    expect(verifyReceipt(tampered, serverKey)).toEqual({
      ok: false,
      reason: expect.stringMatching(/no signature verifies with key [0-9a-f]{64}: the payload, its type or the signature was changed/),
    })
    expect(verifyReceipt(retyped, serverKey)).toEqual({
      ok: false,
      reason: 'the payloadType is "application/json", not "application/vnd.in-toto+json"',
    })
    expect(verifyReceipt(envelope, otherKey)).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /no signature by the given key [0-9a-f]{64}: the receipt names key [0-9a-f]{64} \(signed with another key\)/,
      ),
    })

    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-receipt-files-'))
    try {
      const write = (name: string, content: unknown) => {
        fs.writeFileSync(path.join(folder, name), typeof content === 'string' ? content : JSON.stringify(content))
        return path.join(folder, name)
      }
      const files = {
        good: write('good.json', envelope),
        tampered: write('tampered.json', tampered),
        key: write('key.pem', serverKey),
        other: write('other.pem', otherKey),
      }
      // No config, no data directory, no server: the CLI needs only the two files.
      const cli = (args: string[]) =>
        spawnSync(process.execPath, [path.join(root, 'bin', 'execgate.js'), 'ledger', 'verify-receipt', ...args], {
          cwd: folder,
          encoding: 'utf8',
          env: { PATH: process.env.PATH ?? '' },
          timeout: 60_000,
        })
      const good = cli([files.good, '--key', files.key])
      expect(good.status).toBe(0)
      expect(good.stdout).toMatch(new RegExp(`^ok: run ${run.json.runId} \\(ok on quickjs, tenant globex`))
      expect(good.stdout).toContain(`${sha('42')}  value`)
      const bad = cli([files.tampered, '--key', files.key])
      expect([bad.status, bad.stdout]).toEqual([1, expect.stringMatching(/^FAILED: .*tampered\.json: no signature verifies with key/)])
      const wrongKey = cli([files.good, '--key', files.other])
      expect([wrongKey.status, wrongKey.stdout]).toEqual([1, expect.stringContaining('signed with another key')])
    } finally {
      fs.rmSync(folder, { recursive: true, force: true })
    }
  },
  60_000,
)

test("a plan's receipt covers its steps' run receipts by digest; the CLI checks step files against it", async () => {
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'ledger.js')))
    throw new Error('dist/ is missing: run `npm run build` (npm test does)')
  const step = (id: string, code: string, dependsOn?: string[]) => ({
    id,
    language: 'javascript',
    code,
    ...(dependsOn ? { dependsOn } : {}),
  })
  const created = await call('/v1/plans', { key: ACME, body: { goal: 'two steps', steps: [step('a', '20'), step('b', '22 + 20', ['a'])] } })
  expect(created.status).toBe(201)
  const planId = created.json.id as string
  // The events stream ends when the plan does.
  await call(`/v1/plans/${planId}/events`, { key: ACME })
  const plan = (await call(`/v1/plans/${planId}`, { key: ACME })).json
  expect(plan.state).toBe('COMPLETED')

  const envelope = (await call(`/v1/plans/${planId}/receipt`, { key: ACME })).json
  const serverKey = (await call('/v1/ledger/public-key', { key: ACME })).json.publicKeyPem as string
  const payload = Buffer.from(envelope.payload, 'base64')
  expect(
    verify(null, pae(envelope.payloadType, payload), createPublicKey(serverKey), Buffer.from(envelope.signatures[0].sig, 'base64')),
  ).toBe(true)
  const statement = JSON.parse(payload.toString())
  expect(statement.predicateType).toBe('https://execgate.dev/receipt/plan/v1')
  expect(statement.predicate).toMatchObject({ planId, tenant: 'acme', versions: [{ version: 1 }] })
  const steps = statement.predicate.steps as { runId: string; stepId: string; receiptSha256: string; status: string }[]
  expect(steps.map((item) => [item.stepId, item.status]).sort()).toEqual([
    ['a', 'ok'],
    ['b', 'ok'],
  ])

  // Each step's own receipt is a subject of the plan's, by the digest of its signed payload.
  const subjects = new Map<string, string>(
    statement.subject.map((item: { name: string; digest: { sha256: string } }) => [item.name, item.digest.sha256]),
  )
  const stepReceipts = []
  for (const item of steps) {
    const stepEnvelope = (await call(`/v1/runs/${item.runId}/receipt`, { key: ACME })).json
    const digest = sha(Buffer.from(stepEnvelope.payload, 'base64'))
    expect(subjects.get(`receipts/${item.runId}`)).toBe(digest)
    expect(item.receiptSha256).toBe(digest)
    stepReceipts.push(stepEnvelope)
  }
  expect((await call(`/v1/plans/${planId}/receipt`, { key: GLOBEX })).status).toBe(404)

  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-plan-receipt-'))
  try {
    const write = (name: string, content: unknown) => {
      const file = path.join(folder, name)
      fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content))
      return file
    }
    const files = {
      plan: write('plan.json', envelope),
      a: write('a.json', stepReceipts[0]),
      b: write('b.json', stepReceipts[1]),
      key: write('key.pem', serverKey),
    }
    const other = (await call('/v1/executions', { key: ACME, body: { language: 'javascript', code: '1' } })).json.runId as string
    const stranger = write('stranger.json', (await call(`/v1/runs/${other}/receipt`, { key: ACME })).json)
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [path.join(root, 'bin', 'execgate.js'), 'ledger', 'verify-receipt', ...args], {
        cwd: folder,
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '' },
        timeout: 60_000,
      })
    const ok = cli([files.plan, '--key', files.key, '--step', files.a, files.b])
    expect([ok.status, ok.stdout]).toEqual([
      0,
      expect.stringMatching(new RegExp(`^ok: plan ${planId} \\(tenant acme, 2 step run\\(s\\)\\)`)),
    ])
    const notAStep = cli([files.plan, '--key', files.key, '--step', files.a, stranger])
    expect([notAStep.status, notAStep.stdout]).toEqual([
      1,
      expect.stringContaining(`stranger.json (run ${other}) is not one of the plan's step receipts`),
    ])
  } finally {
    fs.rmSync(folder, { recursive: true, force: true })
  }
}, 60_000)

test('the OpenAPI document lists the receipt routes with the envelope schema', async () => {
  const document = (await (await fetch(`${server.url}/docs/json`)).json()) as {
    paths: Record<string, { get: { responses: Record<string, { content?: Record<string, { schema?: { required?: string[] } }> }> } }>
  }
  for (const route of ['/v1/runs/{id}/receipt', '/v1/plans/{id}/receipt']) {
    expect(document.paths[route]?.get.responses['200']?.content?.['application/json']?.schema?.required).toEqual([
      'payload',
      'payloadType',
      'signatures',
    ])
  }
  expect(Object.keys(document.paths['/v1/ledger/public-key']!.get.responses['200']!.content!)).toEqual([
    'application/json',
    'application/x-pem-file',
  ])
})
