import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'
import { openApiDocument } from '../../src/server/openapi'

/**
 * Issue 25 part 5: files uploaded once (PUT /v1/files, streamed into the upload store with a per-tenant quota) and
 * named by digest afterwards; bound read-only into the process sandbox, never copied through JSON; another tenant's
 * digest refused exactly like a missing one. Real HTTP on loopback, real bubblewrap, real SQLite.
 */

const ACME = 'acme-key-0123456789abcdef'
const GLOBEX = 'globex-key-0123456789abcdef'
const QUOTA = 256 * 1024
const BODY_LIMIT = 32 * 1024
const CSV = 'region,amount\n' + Array.from({ length: 2000 }, (_, i) => `r${i % 7},${i}`).join('\n') + '\n'
const TOTAL = (1999 * 2000) / 2
const sha = (data: string | Buffer) => createHash('sha256').update(data).digest('hex')
const SUM_CSV = "sum(int(line.split(',')[1]) for line in open('sales.csv').read().splitlines()[1:])"

let dataDir: string
let execgate: Execgate
let server: RunningServer
beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-uploads-'))
  execgate = await createExecgate({
    warm: false,
    overrides: {
      execution: { enabled: ['placeholder', 'quickjs', 'monty', 'process'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir, ledger: { enabled: false }, files: { dir: path.join(dataDir, 'uploads'), quotaBytes: QUOTA } },
      security: {
        // A run's time limit is not what this file tests: a cold process-tier Python run at load ~20 passed the default
        // 5 s in a whole-suite run (status timeout). 30 s stays a bound on a run that hangs.
        defaultPolicy: { wallTimeMs: 30_000, cpuTimeMs: 30_000 },
        profiles: { writer: { filesystem: 'sandboxed' }, inspect: { allowedImports: ['os'] } },
      },
      // Far below the quota: an upload is streamed past the server's body limit, never parsed (or buffered) as a body.
      server: {
        apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`],
        tenants: { acme: { profiles: ['writer', 'inspect'] } },
        bodyLimitBytes: BODY_LIMIT,
      },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 60_000)
afterAll(async () => {
  await server.shutdown()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

async function call(
  pathname: string,
  init: { method?: string; key: string; body?: unknown; stream?: Readable; headers?: Record<string, string> },
) {
  const response = await fetch(server.url + pathname, {
    method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
    headers: {
      authorization: `Bearer ${init.key}`,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.stream ? { 'content-type': 'text/csv' } : {}),
      ...init.headers,
    },
    body: init.stream ? (Readable.toWeb(init.stream) as ReadableStream) : init.body === undefined ? undefined : JSON.stringify(init.body),
    ...(init.stream ? { duplex: 'half' } : {}),
  } as RequestInit)
  const text = await response.text()
  return { status: response.status, json: text ? (JSON.parse(text) as any) : undefined }
}

/** A body that arrives in 16 KiB chunks, as a client streaming a file sends it. */
const chunked = (data: string | Buffer) => {
  const bytes = Buffer.from(data)
  return Readable.from(
    (function* () {
      for (let at = 0; at < bytes.length; at += 16 * 1024) yield bytes.subarray(at, at + 16 * 1024)
    })(),
  )
}

describe('PUT /v1/files and requests that name { path, sha256 }', () => {
  let digest: string
  beforeAll(async () => {
    const put = await call('/v1/files', { method: 'PUT', key: ACME, stream: chunked(CSV) })
    expect(put.status).toBe(201)
    digest = put.json.sha256
  })

  test('the upload is stored by its SHA-256, once; the same bytes again are reused, and HEAD/GET say so', async () => {
    expect(digest).toBe(sha(CSV))
    const again = await call('/v1/files', { method: 'PUT', key: ACME, stream: chunked(CSV) })
    expect(again).toMatchObject({ status: 200, json: { sha256: digest, bytes: Buffer.byteLength(CSV), reused: true } })
    const known = await call(`/v1/files?sha256=${digest}`, { method: 'PUT', key: ACME, stream: chunked('') })
    expect(known.json.reused).toBe(true)
    const head = await fetch(`${server.url}/v1/files/${digest}`, { method: 'HEAD', headers: { authorization: `Bearer ${ACME}` } })
    expect(head.status).toBe(200)
    const list = await call('/v1/files', { key: ACME })
    expect(list.json).toMatchObject({ usedBytes: Buffer.byteLength(CSV), quotaBytes: QUOTA, files: [{ sha256: digest }] })
  })

  test('a run names the upload and reads it from its workspace; the process tier binds it in read-only, not a copy', async () => {
    const result = await call('/v1/executions', {
      key: ACME,
      body: { language: 'python', adapter: 'process', code: SUM_CSV, files: [{ path: 'sales.csv', sha256: digest }] },
    })
    expect(result.json).toMatchObject({ status: 'ok', adapter: 'process', value: TOTAL })
    // A bind mount is its own mount: the file's device is not the workspace tmpfs's.
    const mounted = await call('/v1/executions', {
      key: ACME,
      headers: { 'x-execgate-profile': 'inspect' },
      body: {
        language: 'python',
        adapter: 'process',
        code: "import os\n[os.stat('data/sales.csv').st_dev != os.stat('.').st_dev, os.path.getsize('data/sales.csv')]",
        files: [{ path: 'data/sales.csv', sha256: digest }],
      },
    })
    expect(mounted.json).toMatchObject({ status: 'ok', value: [true, Buffer.byteLength(CSV)] })
  })

  test('a run that may write gets its own files back, never the upload it was given', async () => {
    const result = await call('/v1/executions', {
      key: ACME,
      headers: { 'x-execgate-profile': 'writer' },
      body: {
        language: 'python',
        adapter: 'process',
        code: "open('total.txt', 'w').write(str(" + SUM_CSV + '))',
        files: [{ path: 'sales.csv', sha256: digest }],
      },
    })
    expect(result.json.status).toBe('ok')
    expect(result.json.files).toEqual([{ path: 'total.txt', content: String(TOTAL) }])
  })

  test('an adapter that cannot bind files gets the bytes copied into its workspace', async () => {
    const result = await call('/v1/executions', {
      key: ACME,
      body: {
        language: 'javascript',
        code: "(await read_file('sales.csv')).split('\\n').slice(1, -1).reduce((sum, line) => sum + Number(line.split(',')[1]), 0)",
        files: [{ path: 'sales.csv', sha256: digest }],
      },
    })
    expect(result.json).toMatchObject({ status: 'ok', adapter: 'quickjs', value: TOTAL })
  })

  test("another tenant's digest is refused exactly like a missing one, before anything runs", async () => {
    const request = (sha256: string) => ({ language: 'python', adapter: 'process', code: SUM_CSV, files: [{ path: 'sales.csv', sha256 }] })
    const theirs = await call('/v1/executions', { key: GLOBEX, body: request(digest) })
    const missing = await call('/v1/executions', { key: GLOBEX, body: request(sha('never uploaded')) })
    expect(theirs.json).toMatchObject({ status: 'invalid_request', adapter: 'execgate', error: { code: 'EXECGATE_FILE_NOT_FOUND' } })
    expect(missing.json).toMatchObject({ status: 'invalid_request', adapter: 'execgate', error: { code: 'EXECGATE_FILE_NOT_FOUND' } })
    expect(theirs.json.message.replace(digest, 'D')).toBe(missing.json.message.replace(sha('never uploaded'), 'D'))
    expect(JSON.stringify(theirs.json)).not.toContain(String(TOTAL))
    expect((await call(`/v1/files/${digest}`, { key: GLOBEX })).status).toBe(404)
    expect((await call(`/v1/files/${digest}`, { key: GLOBEX, method: 'DELETE' })).status).toBe(404)
    expect((await call('/v1/files', { key: GLOBEX })).json.files).toEqual([])
  })

  test('past the quota an upload is refused (413) and nothing is kept; a wrong declared digest is refused (400)', async () => {
    const big = Buffer.alloc(QUOTA, 'x')
    const over = await call('/v1/files', { method: 'PUT', key: ACME, stream: chunked(big) })
    expect(over).toMatchObject({ status: 413, json: { error: { code: 'EXECGATE_FILE_QUOTA' } } })
    expect(over.json.error.message).toContain(`quota of ${QUOTA} bytes`)
    expect((await call('/v1/files', { key: ACME })).json.usedBytes).toBe(Buffer.byteLength(CSV))
    expect(fs.readdirSync(path.join(dataDir, 'uploads', 'incoming'))).toEqual([])
    const wrong = await call(`/v1/files?sha256=${sha('other')}`, { method: 'PUT', key: ACME, stream: chunked('a,b\n1,2\n') })
    expect(wrong).toMatchObject({ status: 400, json: { error: { code: 'EXECGATE_FILE_DIGEST_MISMATCH' } } })
  })

  test("an upload over the server's body limit is streamed into the store whole; a JSON body that size is refused", async () => {
    const large = Buffer.alloc(4 * BODY_LIMIT, 'y')
    const put = await call('/v1/files', { method: 'PUT', key: GLOBEX, stream: chunked(large) })
    expect(put).toMatchObject({ status: 201, json: { sha256: sha(large), bytes: large.length } })
    const tooLarge = await call('/v1/executions', { key: GLOBEX, body: { language: 'python', code: `'${'y'.repeat(2 * BODY_LIMIT)}'` } })
    expect(tooLarge.status).toBe(413)
    expect((await call(`/v1/files/${put.json.sha256}`, { method: 'DELETE', key: GLOBEX })).status).toBe(204)
  })

  test('DELETE frees the quota; the OpenAPI document lists the routes and the file reference', async () => {
    const other = await call('/v1/files', { method: 'PUT', key: ACME, stream: chunked('x,y\n1,2\n') })
    expect((await call(`/v1/files/${other.json.sha256}`, { method: 'DELETE', key: ACME })).status).toBe(204)
    expect((await call('/v1/files', { key: ACME })).json.usedBytes).toBe(Buffer.byteLength(CSV))
    const document = openApiDocument() as any
    expect(document.paths['/v1/files'].put).toBeDefined()
    expect(document.paths['/v1/files/{sha256}'].get).toBeDefined()
    expect(JSON.stringify(document.components.schemas.ExecutionRequest.properties.files)).toContain('sha256')
  })
})

test('the library names uploads too: execgate.uploads.put, then { path, sha256 } (tenant "local")', async () => {
  const stored = await execgate.uploads.put('local', chunked(CSV))
  const result = await execgate.execute({
    language: 'python',
    adapter: 'process',
    code: SUM_CSV,
    files: [{ path: 'sales.csv', sha256: stored.sha256 }],
  })
  expect(result).toMatchObject({ status: 'ok', value: TOTAL })
  const elsewhere = await execgate.execute(
    { language: 'python', adapter: 'process', code: SUM_CSV, files: [{ path: 'sales.csv', sha256: stored.sha256 }] },
    { tenant: 'someone-else' },
  )
  expect(elsewhere.error?.code).toBe('EXECGATE_FILE_NOT_FOUND')
}, 60_000)

test('execgate run --file uploads the file into the store, or reuses it, and the run reads it bound in', () => {
  const root = path.join(__dirname, '..', '..')
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-cli-file-'))
  try {
    fs.writeFileSync(path.join(work, 'sales.csv'), CSV)
    fs.writeFileSync(path.join(work, 'analysis.py'), "import os\n[os.path.getsize('sales.csv'), " + SUM_CSV + ']\n')
    const env = {
      PATH: process.env.PATH ?? '',
      EXECGATE_FABRIC_DATA_DIR: path.join(work, 'data'),
      EXECGATE_FABRIC_LEDGER_ENABLED: 'false',
      EXECGATE_LOG_LEVEL: 'silent',
      EXECGATE_SECURITY_PROFILES: JSON.stringify({ inspect: { allowedImports: ['os'] } }),
    }
    const run = () =>
      spawnSync(
        process.execPath,
        [
          path.join(root, 'bin', 'execgate.js'),
          'run',
          path.join(work, 'analysis.py'),
          '--adapter',
          'process',
          '--profile',
          'inspect',
          '--file',
          path.join(work, 'sales.csv'),
          '--json',
        ],
        { cwd: work, env, encoding: 'utf8', timeout: 60_000 },
      )
    const first = run()
    expect(JSON.parse(first.stdout)).toMatchObject({ status: 'ok', value: [Buffer.byteLength(CSV), TOTAL] })
    const blob = path.join(work, 'data', 'uploads', sha(CSV).slice(0, 2), sha(CSV))
    expect(fs.readFileSync(blob, 'utf8')).toBe(CSV)
    const inode = fs.statSync(blob).ino
    expect(JSON.parse(run().stdout)).toMatchObject({ status: 'ok', value: [Buffer.byteLength(CSV), TOTAL] })
    expect(fs.statSync(blob).ino).toBe(inode)
  } finally {
    fs.rmSync(work, { recursive: true, force: true })
  }
}, 120_000)
