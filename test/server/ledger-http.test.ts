import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { sha256 } from '../../src/fabric/ledger/run-capture'
import { serve, type RunningServer } from '../../src/server/serve'

/**
 * The ledger's routes over real HTTP on loopback, with two tenants. A tenant sees its own runs and artifacts only:
 * another's run id or artifact digest answers 404 exactly like a missing one, and bytes both tenants produced are each
 * one's through its own records, with lineage showing its own runs only.
 */

const ACME = 'acme-key-0123456789abcdef'
const GLOBEX = 'globex-key-0123456789abcdef'
let dataDir: string
let execgate: Execgate
let server: RunningServer

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-ledger-http-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir },
      security: { profiles: { files: { filesystem: 'sandboxed' } } },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`], tenants: { acme: { profile: 'files' }, globex: { profile: 'files' } } },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
})
afterAll(async () => {
  await server.shutdown()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

async function call(url: string, key: string, body?: unknown) {
  const response = await fetch(server.url + url, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const bytes = Buffer.from(await response.arrayBuffer())
  let json: any
  try {
    json = JSON.parse(bytes.toString())
  } catch {
    json = undefined
  }
  return { status: response.status, headers: response.headers, bytes, json }
}

const report = (total: number) => `await write_file('report.csv', 'total\\n${total}\\n'); ${total}`

test("a tenant reads its run's provenance, record, artifacts and lineage; the other tenant gets 404 for each", async () => {
  const run = await call('/v1/executions', ACME, { language: 'javascript', code: report(7) })
  expect(run.json).toMatchObject({ status: 'ok', runId: expect.any(String) })
  const runId = run.json.runId as string
  const csv = sha256('total\n7\n')

  const provenance = await call(`/v1/runs/${runId}/provenance`, ACME)
  expect(provenance.status).toBe(200)
  expect(provenance.json.activity[`run:${runId}`]).toMatchObject({ 'execgate:status': 'ok' })
  expect(Object.values(provenance.json.agent)).toHaveLength(2)
  expect(provenance.json.agent['tenant:acme']).toBeDefined()
  const record = await call(`/v1/runs/${runId}/record`, ACME)
  expect(record.json).toMatchObject({
    seq: 1,
    record: { tenant: 'acme', outputs: [{ path: 'report.csv', sha256: csv, mediaType: 'text/csv' }] },
  })
  // The API key is never part of what is recorded.
  expect(record.bytes.toString()).not.toContain(ACME)

  const artifact = await call(`/v1/artifacts/${csv}`, ACME)
  expect(artifact.status).toBe(200)
  expect(artifact.headers.get('content-type')).toMatch(/^text\/csv/)
  expect(artifact.headers.get('etag')).toBe(`"${csv}"`)
  expect(artifact.bytes.toString()).toBe('total\n7\n')
  const lineage = await call(`/v1/artifacts/${csv}/lineage`, ACME)
  expect(lineage.json.ancestors.activities.map((activity: { id: string }) => activity.id)).toEqual([runId])

  for (const url of [`/v1/runs/${runId}/provenance`, `/v1/runs/${runId}/record`, `/v1/artifacts/${csv}`, `/v1/artifacts/${csv}/lineage`]) {
    const foreign = await call(url, GLOBEX)
    const missing = await call(url.replace(runId, '00000000-0000-4000-8000-000000000000').replace(csv, sha256('nothing')), ACME)
    expect({ url, status: foreign.status, code: foreign.json.error.code }).toEqual({ url, status: 404, code: 'EXECGATE_NOT_FOUND' })
    expect(missing.status).toBe(404)
  }
})

test("bytes both tenants produced are each one's through its own records; lineage shows only its own runs", async () => {
  const acme = await call('/v1/executions', ACME, { language: 'javascript', code: report(9) })
  const globex = await call('/v1/executions', GLOBEX, { language: 'javascript', code: report(9) })
  const csv = sha256('total\n9\n')
  for (const [key, run] of [
    [ACME, acme],
    [GLOBEX, globex],
  ] as const) {
    expect((await call(`/v1/artifacts/${csv}`, key)).bytes.toString()).toBe('total\n9\n')
    const lineage = await call(`/v1/artifacts/${csv}/lineage`, key)
    expect(lineage.json.ancestors.activities.map((activity: { id: string }) => activity.id)).toEqual([run.json.runId])
  }
})

test("export in both formats and verify are the tenant's own; bad input is a 400", async () => {
  await call('/v1/executions', GLOBEX, { language: 'javascript', code: '40 + 2' })
  const prov = await call('/v1/ledger/export?format=prov-json', GLOBEX)
  expect(Object.keys(prov.json.activity).length).toBeGreaterThan(0)
  expect(JSON.stringify(prov.json)).not.toContain('tenant:acme')
  const events = await call('/v1/ledger/export?format=openlineage&limit=100', GLOBEX)
  expect(events.json.every((event: { job: { namespace: string } }) => event.job.namespace === 'execgate://globex')).toBe(true)
  expect(events.json[0]).toMatchObject({
    eventType: 'COMPLETE',
    schemaURL: expect.stringContaining('openlineage.io'),
    run: { runId: expect.any(String) },
  })
  const verify = await call('/v1/ledger/verify', GLOBEX)
  expect(verify.json).toMatchObject({ tenant: 'globex', ok: true, records: events.json.length })
  expect((await call('/v1/ledger/export?format=xml', GLOBEX)).json.error.code).toBe('EXECGATE_REQUEST_INVALID')
  expect((await call('/v1/artifacts/not-a-digest', GLOBEX)).status).toBe(400)
  expect((await call('/v1/artifacts/not-a-digest', '')).status).toBe(401)
})

test('the OpenAPI document lists the ledger routes', async () => {
  const document = (await (await fetch(`${server.url}/docs/json`)).json()) as { paths: Record<string, unknown> }
  expect(Object.keys(document.paths)).toEqual(
    expect.arrayContaining([
      '/v1/artifacts/{sha256}',
      '/v1/artifacts/{sha256}/lineage',
      '/v1/runs/{id}/provenance',
      '/v1/ledger/export',
      '/v1/ledger/verify',
    ]),
  )
})
