import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startRedisServer, type RedisServer } from '../../bench/redis-server'
import { S3Objects } from '../../src/workspace'
import { startS3Server, type S3Server } from '../servers/s3-server'
import { ACME, GLOBEX } from '../servers/http-caller'
import { kill, startServe, until, type Node } from './cluster'

/**
 * Uploads across nodes (issue 25): two `execgate serve` processes of the built CLI on loopback, each with a data
 * folder of its own, one redis-server (the fabric's store, so the upload index) and one S3-compatible server (the
 * ledger's blobs, so the uploads' bytes). A file uploaded through node A is listed, run (bound into a process
 * sandbox from B's own copy, fetched from the bucket and checked), named by a task on the Redis store and deleted
 * through node B; the quota counts both
 * nodes; another tenant sees nothing through either.
 */

const BUCKET = 'execgate-uploads-multi-node'
const CSV = 'region,amount\n' + Array.from({ length: 5000 }, (_, i) => `r${i % 9},${i}`).join('\n') + '\n'
const TOTAL = (4999 * 5000) / 2
const DIGEST = createHash('sha256').update(CSV).digest('hex')
const SUM_CSV = "sum(int(line.split(',')[1]) for line in open('sales.csv').read().splitlines()[1:])"
const QUOTA = 2 * Buffer.byteLength(CSV)

let redis: RedisServer
let s3: S3Server
let root: string
let a: Node
let b: Node

function env(name: string): NodeJS.ProcessEnv {
  fs.mkdirSync(path.join(root, name), { recursive: true })
  return {
    ...process.env,
    EXECGATE_LOG_LEVEL: 'warn',
    EXECGATE_READINESS_ENABLED: 'false',
    EXECGATE_EXECUTION_ENABLED: 'quickjs,process',
    EXECGATE_SERVER_API_KEYS: `acme=${ACME},globex=${GLOBEX}`,
    EXECGATE_FABRIC_STORE: 'redis',
    EXECGATE_FABRIC_REDIS_URL: redis.url,
    EXECGATE_FABRIC_DATA_DIR: path.join(root, name),
    EXECGATE_FABRIC_FILES_QUOTA_BYTES: String(QUOTA),
    EXECGATE_FABRIC_LEDGER_BLOBS: 's3',
    EXECGATE_FABRIC_S3_BUCKET: BUCKET,
    EXECGATE_FABRIC_S3_ENDPOINT: s3.endpoint,
    EXECGATE_FABRIC_S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
  }
}

async function call(node: Node, route: string, init: { key?: string; method?: string; body?: unknown; raw?: string } = {}) {
  const response = await fetch(node.url + route, {
    method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
    headers: {
      authorization: `Bearer ${init.key ?? ACME}`,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.raw !== undefined ? { 'content-type': 'text/csv' } : {}),
    },
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
    signal: AbortSignal.timeout(30_000),
  })
  const text = await response.text()
  return { status: response.status, json: text ? (JSON.parse(text) as any) : undefined }
}

const run = (node: Node, key = ACME) =>
  call(node, '/v1/executions', {
    key,
    body: { language: 'python', adapter: 'process', code: SUM_CSV, files: [{ path: 'sales.csv', sha256: DIGEST }] },
  })

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-uploads-nodes-'))
  redis = await startRedisServer()
  s3 = await startS3Server()
  await new S3Objects(s3.settings(BUCKET)).ensureBucket()
  ;[a, b] = await Promise.all([startServe(env('a')), startServe(env('b'))])
}, 90_000)

afterAll(async () => {
  await Promise.all([a, b].filter(Boolean).map((node) => kill(node)))
  await redis?.stop()
  await s3?.stop()
  fs.rmSync(root, { recursive: true, force: true })
}, 60_000)

test('a file uploaded through node A is listed, run and deleted through node B; the quota counts both', async () => {
  const put = await call(a, '/v1/files', { method: 'PUT', raw: CSV })
  expect(put).toMatchObject({ status: 201, json: { sha256: DIGEST, bytes: Buffer.byteLength(CSV), reused: false } })
  const bucket = new S3Objects(s3.settings(BUCKET)).under('execgate/uploads/') // fabric.s3.prefix, then uploads/
  expect((await bucket.get(DIGEST))?.body.toString()).toBe(CSV)
  // B knows it from the shared index: listed, and the same bytes through B are a reuse, not a second upload.
  expect((await call(b, '/v1/files')).json).toMatchObject({ usedBytes: Buffer.byteLength(CSV), files: [{ sha256: DIGEST }] })
  expect((await call(b, `/v1/files?sha256=${DIGEST}`, { method: 'PUT', raw: '' })).json).toMatchObject({ reused: true })
  // B has no copy of its own until a run names it; then it fetches the bytes from the bucket and binds them in.
  const bCopy = path.join(root, 'b', 'uploads', DIGEST.slice(0, 2), DIGEST)
  expect(fs.existsSync(bCopy)).toBe(false)
  const viaB = await run(b)
  expect({ status: viaB.json.status, stderr: viaB.json.stderr }).toMatchObject({ status: 'ok' })
  expect(viaB.json).toMatchObject({ adapter: 'process', value: TOTAL })
  expect(fs.readFileSync(bCopy, 'utf8')).toBe(CSV)
  expect((await run(a)).json).toMatchObject({ status: 'ok', value: TOTAL })
  // A task on the Redis store, submitted through B: whichever node's worker takes it finds the upload.
  const task = await call(b, '/v1/tasks', {
    body: { request: { language: 'python', adapter: 'process', code: SUM_CSV, files: [{ path: 'sales.csv', sha256: DIGEST }] } },
  })
  expect(task.status).toBe(201)
  const done = await until(
    () => call(a, `/v1/tasks/${task.json.id}`),
    (answer) => ['COMPLETED', 'FAILED'].includes(answer.json?.state),
    'the task naming the upload',
  )
  expect(done.json).toMatchObject({ state: 'COMPLETED', result: { status: 'ok', value: TOTAL } })
  // The tenant's quota is one across nodes: what A stored counts against an upload through B.
  const over = await call(b, '/v1/files', { method: 'PUT', raw: 'x'.repeat(Buffer.byteLength(CSV) + 1) })
  expect(over).toMatchObject({ status: 413, json: { error: { code: 'EXECGATE_FILE_QUOTA' } } })
  // Another tenant: nothing through either node.
  expect((await call(b, `/v1/files/${DIGEST}`, { key: GLOBEX })).status).toBe(404)
  expect((await run(a, GLOBEX)).json).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_FILE_NOT_FOUND' } })
  // Deleted through B: gone through A too, and from the bucket (no tenant holds it any more).
  expect((await call(b, `/v1/files/${DIGEST}`, { method: 'DELETE' })).status).toBe(204)
  expect((await call(a, `/v1/files/${DIGEST}`)).status).toBe(404)
  expect((await run(a)).json).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_FILE_NOT_FOUND' } })
  expect((await call(a, '/v1/files')).json).toMatchObject({ usedBytes: 0, files: [] })
  expect(await bucket.has(DIGEST)).toBe(false)
}, 120_000)
