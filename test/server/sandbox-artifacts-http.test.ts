import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, GLOBEX, httpCaller } from '../servers/http-caller'

/**
 * Sandbox files to and from the ledger over real HTTP on loopback (native shell; SQLite records and blob folder in a
 * temp dataDir), with two tenants: POST /v1/sandboxes/:id/artifacts, PUT …/files/*?sha256=, start's files by digest.
 */

const UNKNOWN = 'e'.repeat(64)

let execgate: Execgate
let server: RunningServer
let dataDir: string

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-sandbox-artifacts-http-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['shell'] },
      fabric: { dataDir },
      readiness: { enabled: false },
      log: { level: 'silent' },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`] },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 60_000)

afterAll(async () => {
  await server.shutdown()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

const call = httpCaller(() => server.url)

const start = async (key: string, body: unknown = { adapter: 'shell' }) => call('/v1/sandboxes', { key, body })

test('save a file to the ledger, fetch it as an artifact, start another sandbox with it and PUT it by digest', async () => {
  const first = (await start(ACME)).json.id as string
  expect(
    (await call(`/v1/sandboxes/${first}/exec`, { key: ACME, body: { command: 'mkdir -p out && echo "total 42" > out/summary.txt' } })).json
      .status,
  ).toBe('ok')
  const saved = await call(`/v1/sandboxes/${first}/artifacts`, { key: ACME, body: { path: 'out/summary.txt' } })
  const digest = createHash('sha256').update('total 42\n').digest('hex')
  expect(saved.status).toBe(201)
  expect(saved.json).toEqual({ path: 'out/summary.txt', sha256: digest, size: 9, mediaType: 'text/plain' })
  expect(saved.headers.get('location')).toBe(`/v1/artifacts/${digest}`)

  const artifact = await call(`/v1/artifacts/${digest}`, { key: ACME })
  expect(artifact).toMatchObject({ status: 200, text: 'total 42\n' })
  const lineage = await call(`/v1/artifacts/${digest}/lineage`, { key: ACME })
  expect(lineage.json.ancestors.activities).toEqual([expect.objectContaining({ kind: 'sandbox_file', sandboxId: first })])

  const second = await start(ACME, { adapter: 'shell', files: [{ path: 'in.txt', sha256: digest }] })
  expect(second.status).toBe(201)
  const id = second.json.id as string
  expect((await call(`/v1/sandboxes/${id}/files/copy/in.txt?sha256=${digest}`, { key: ACME, method: 'PUT' })).status).toBe(204)
  const read = await call(`/v1/sandboxes/${id}/exec`, { key: ACME, body: { command: 'cat in.txt copy/in.txt' } })
  expect(read.json).toMatchObject({ status: 'ok', stdout: 'total 42\ntotal 42\n' })

  // A body and ?sha256= together are ambiguous.
  const both = await call(`/v1/sandboxes/${id}/files/x.txt?sha256=${digest}`, { key: ACME, method: 'PUT', raw: Buffer.from('x') })
  expect(both).toMatchObject({ status: 400, json: { error: { code: 'EXECGATE_REQUEST_INVALID' } } })
  await Promise.all([first, id].map((sandbox) => call(`/v1/sandboxes/${sandbox}`, { key: ACME, method: 'DELETE' })))
})

test(
  "another tenant's artifact answers 404 exactly like an unknown digest, on start and on " + "PUT; a foreign sandbox's save is 404",
  async () => {
    const acme = (await start(ACME)).json.id as string
    await call(`/v1/sandboxes/${acme}/files/secret.txt`, { key: ACME, method: 'PUT', raw: Buffer.from('acme secret\n') })
    const digest = (await call(`/v1/sandboxes/${acme}/artifacts`, { key: ACME, body: { path: 'secret.txt' } })).json.sha256 as string
    const globex = (await start(GLOBEX)).json.id as string

    const answers = async (sha: string) => {
      const started = await start(GLOBEX, { adapter: 'shell', files: [{ path: 'x', sha256: sha }] })
      const put = await call(`/v1/sandboxes/${globex}/files/x?sha256=${sha}`, { key: GLOBEX, method: 'PUT' })
      const served = await call(`/v1/artifacts/${sha}`, { key: GLOBEX })
      return [started, put, served].map((answer) => ({
        status: answer.status,
        code: answer.json?.error?.code,
        message: answer.json?.error?.message.replace(sha, '<digest>'),
      }))
    }
    const foreign = await answers(digest)
    expect(foreign).toEqual(await answers(UNKNOWN))
    expect(foreign[0]).toEqual({ status: 404, code: 'EXECGATE_NOT_FOUND', message: '[execgate] no artifact <digest> for tenant globex' })
    expect(foreign.map((answer) => answer.status)).toEqual([404, 404, 404])

    // Saving from another tenant's sandbox is a missing sandbox; a missing file is a missing file.
    expect((await call(`/v1/sandboxes/${acme}/artifacts`, { key: GLOBEX, body: { path: 'secret.txt' } })).status).toBe(404)
    expect(await call(`/v1/sandboxes/${acme}/artifacts`, { key: ACME, body: { path: 'nope.txt' } })).toMatchObject({
      status: 404,
      json: { error: { message: expect.stringContaining('no file "nope.txt"') } },
    })
    expect((await call(`/v1/sandboxes/${acme}/artifacts`, { key: ACME, body: { file: 'secret.txt' } })).status).toBe(400)
    expect(await start(ACME, { files: [{ path: 'x', content: 'x', sha256: UNKNOWN }] })).toMatchObject({
      status: 400,
      json: { error: { message: expect.stringContaining('files[0] needs either content or sha256') } },
    })
    await Promise.all([
      call(`/v1/sandboxes/${acme}`, { key: ACME, method: 'DELETE' }),
      call(`/v1/sandboxes/${globex}`, { key: GLOBEX, method: 'DELETE' }),
    ])
  },
)

test('with the ledger off, saving answers 501 EXECGATE_LEDGER_DISABLED', async () => {
  const off = await createExecgate({
    overrides: {
      execution: { enabled: ['shell'] },
      fabric: { dataDir, ledger: { enabled: false } },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  const offServer = await serve(off, { port: 0 }, false)
  try {
    const id = (
      (await (
        await fetch(`${offServer.url}/v1/sandboxes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      ).json()) as { id: string }
    ).id
    const saved = await fetch(`${offServer.url}/v1/sandboxes/${id}/artifacts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ path: 'a.txt' }),
    })
    expect(saved.status).toBe(501)
    expect(await saved.json()).toMatchObject({
      error: { code: 'EXECGATE_LEDGER_DISABLED', message: expect.stringContaining('fabric.ledger.enabled is false') },
    })
  } finally {
    await offServer.shutdown()
  }
})
