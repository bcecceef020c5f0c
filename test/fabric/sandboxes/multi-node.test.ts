import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'
import { createExecgate } from '../../../src'
import { S3Objects } from '../../../src/workspace'
import { startS3Server, type S3Server } from '../../servers/s3-server'
import { ACME, GLOBEX } from '../../servers/http-caller'

/**
 * Sandboxes across nodes, as a deployment runs them: two `execgate serve` processes of the built CLI on loopback, one
 * redis-server (the sandbox registry, the ledger's records) and one S3-compatible server (the ledger's blobs). A
 * sandbox started through node A is used through node B (files, exec, SSE output, snapshot): B forwards to A. The
 * per-tenant cap counts both nodes. A is killed with SIGKILL; B reports the sandbox `lost` with its last snapshot
 * (never a hang or a 500), and a sandbox restored from that snapshot on B has the files. Another tenant sees none of it.
 */

const BIN = path.join(__dirname, '..', '..', '..', 'bin', 'execgate.js')
const BUCKET = 'execgate-multi-node'

let redis: RedisServer
let s3: S3Server
let root: string
/** Its own temp root: the process backend opens it to the sandbox uids, which a 0700 folder above would not let in. */
let sandboxRoot: string
const nodes: { child: ChildProcess; url: string }[] = []

function env(name: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    EXECGATE_LOG_LEVEL: 'warn',
    EXECGATE_READINESS_ENABLED: 'false',
    EXECGATE_EXECUTION_ENABLED: 'shell,process',
    EXECGATE_SERVER_API_KEYS: `acme=${ACME},globex=${GLOBEX}`,
    EXECGATE_FABRIC_STORE: 'redis',
    EXECGATE_FABRIC_REDIS_URL: redis.url,
    EXECGATE_FABRIC_NODE_HEARTBEAT_MS: '300',
    EXECGATE_FABRIC_DATA_DIR: path.join(root, name),
    EXECGATE_FABRIC_LEDGER_BLOBS: 's3',
    EXECGATE_FABRIC_S3_BUCKET: BUCKET,
    EXECGATE_FABRIC_S3_ENDPOINT: s3.endpoint,
    EXECGATE_FABRIC_S3_FORCE_PATH_STYLE: 'true',
    EXECGATE_SANDBOXES_MAX_PER_TENANT: '2',
    EXECGATE_ADAPTERS_PROCESS_PERSISTENT_DIR: sandboxRoot,
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
  }
}

function startNode(name: string): Promise<{ child: ChildProcess; url: string }> {
  fs.mkdirSync(path.join(root, name), { recursive: true })
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0'], { env: env(name), stdio: ['ignore', 'ignore', 'pipe'] })
  return new Promise((resolve, reject) => {
    let text = ''
    const timer = setTimeout(() => reject(new Error(`node ${name} did not start: ${text}`)), 30_000)
    child.stderr!.on('data', (data: Buffer) => {
      text += data.toString()
      const match = /serving on (http:\/\/\S+)/.exec(text)
      if (match) (clearTimeout(timer), resolve({ child, url: match[1]! }))
    })
    child.once('exit', (code) => (clearTimeout(timer), reject(new Error(`node ${name} exited ${code}: ${text}`))))
  })
}

async function call(node: { url: string }, route: string, init: { key?: string; method?: string; body?: unknown; raw?: Buffer } = {}) {
  const response = await fetch(node.url + route, {
    method: init.method ?? (init.body !== undefined || init.raw ? 'POST' : 'GET'),
    headers: {
      authorization: `Bearer ${init.key ?? ACME}`,
      ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.raw ? { 'content-type': 'application/octet-stream' } : {}),
    },
    body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
    signal: AbortSignal.timeout(20_000),
  })
  const text = await response.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: response.status, text, json }
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-multi-node-'))
  sandboxRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-multi-node-sandboxes-'))
  redis = await startRedisServer()
  s3 = await startS3Server()
  await new S3Objects(s3.settings(BUCKET)).ensureBucket()
  nodes.push(await startNode('a'), await startNode('b'))
}, 90_000)

afterAll(async () => {
  await Promise.all(
    nodes.map((node) =>
      node.child.exitCode !== null || node.child.signalCode !== null
        ? Promise.resolve()
        : new Promise((resolve) => (node.child.once('exit', resolve), node.child.kill('SIGKILL'))),
    ),
  )
  // What the killed node's sandbox left (its folder, its tmpfs as root) goes as it would at the next start: a sweep.
  const sweeper = await createExecgate({
    overrides: {
      execution: { enabled: ['process'] },
      adapters: { process: { persistentDir: sandboxRoot } },
      readiness: { enabled: false },
      log: { level: 'silent' },
    },
  })
  await sweeper.sandboxes.sweep()
  await sweeper.dispose()
  await redis?.stop()
  await s3?.stop()
  for (const folder of [root, sandboxRoot]) fs.rmSync(folder, { recursive: true, force: true })
}, 60_000)

test('the per-tenant cap counts the sandboxes of both nodes; a DELETE through the other node stops one', async () => {
  const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]]
  const first = await call(a, '/v1/sandboxes', { key: GLOBEX, body: { adapter: 'shell' } })
  const second = await call(b, '/v1/sandboxes', { key: GLOBEX, body: { adapter: 'shell' } })
  expect([first.status, second.status]).toEqual([201, 201])
  for (const node of [a, b]) {
    const third = await call(node, '/v1/sandboxes', { key: GLOBEX, body: { adapter: 'shell' } })
    expect(third.status).toBe(429)
    expect(third.json.error.code).toBe('EXECGATE_SANDBOX_LIMIT')
  }
  expect((await call(b, `/v1/sandboxes/${first.json.id}`, { key: GLOBEX, method: 'DELETE' })).status).toBe(204)
  expect((await call(a, `/v1/sandboxes/${second.json.id}`, { key: GLOBEX, method: 'DELETE' })).status).toBe(204)
  expect((await call(a, '/v1/sandboxes', { key: GLOBEX })).json.sandboxes).toEqual([])
}, 60_000)

/**
 * A library execgate of the same deployment (its Redis, its API keys), serving nothing: it reaches sandboxes through
 * their nodes. Its keys are in its configuration (`server.apiKeys`), or only in `EXECGATE_API_KEYS` (`keysFrom: 'env'`).
 */
async function library(keysFrom: 'config' | 'env' = 'config') {
  const keys = [`acme=${ACME}`, `globex=${GLOBEX}`]
  const before = process.env.EXECGATE_API_KEYS
  if (keysFrom === 'env') process.env.EXECGATE_API_KEYS = keys.join(',')
  try {
    const execgate = await createExecgate({
      overrides: {
        execution: { enabled: ['shell'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        server: { apiKeys: keysFrom === 'config' ? keys : [] },
        fabric: { store: 'redis', redisUrl: redis.url, dataDir: path.join(root, 'library'), ledger: { enabled: false } },
      },
    })
    void execgate.sandboxes // its keys are read when its sandboxes are first used
    return execgate
  } finally {
    if (before === undefined) delete process.env.EXECGATE_API_KEYS
    else process.env.EXECGATE_API_KEYS = before
  }
}

test(
  "the library's find() (keys only in EXECGATE_API_KEYS) and the MCP tools reach a sandbox " + 'on another node, tenants kept apart',
  async () => {
    const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]]
    const started = await call(a, '/v1/sandboxes', { body: { adapter: 'shell', files: [{ path: 'in.txt', content: 'b\na\nb\n' }] } })
    expect(started.status).toBe(201)
    const id = started.json.id as string
    const execgate = await library('env')
    try {
      expect(execgate.sandboxes.get(id, { tenant: 'acme' })).toBeUndefined()
      const sandbox = await execgate.sandboxes.find(id, { tenant: 'acme' })
      expect(sandbox).toMatchObject({ id, adapter: 'shell', tenant: 'acme' })
      expect(sandbox!.info().node).toBe(started.json.node)
      const sorted = await sandbox!.exec('sort in.txt | uniq -c > counts.txt; cat counts.txt')
      expect(sorted).toMatchObject({ status: 'ok', stdout: expect.stringMatching(/1 a\n\s+2 b\n$/) })
      await sandbox!.writeFile('notes/more.txt', 'c\n')
      expect((await sandbox!.readFile('notes/more.txt')).toString()).toBe('c\n')
      expect((await sandbox!.listFiles()).map((file) => file.path)).toEqual(['counts.txt', 'in.txt', 'notes/more.txt'])
      expect(await sandbox!.readFiles(['in.txt'])).toEqual([{ path: 'in.txt', content: 'b\na\nb\n' }])
      // Another tenant: undefined, exactly like a missing id.
      expect(await execgate.sandboxes.find(id, { tenant: 'globex' })).toBeUndefined()
      expect(await execgate.sandboxes.find('sb-00000000000000000000', { tenant: 'acme' })).toBeUndefined()
    } finally {
      await execgate.dispose()
    }

    // MCP on B: its sandbox tools reach A's sandbox for its tenant, and not for another.
    const connect = async (key: string) => {
      const client = new Client({ name: 'multi-node-test', version: '0.0.0' })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${b.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
      )
      return client
    }
    const acme = await connect(ACME)
    const globex = await connect(GLOBEX)
    try {
      const read = await acme.callTool({ name: 'sandbox_exec', arguments: { sandboxId: id, command: 'cat notes/more.txt counts.txt' } })
      expect(read.structuredContent).toMatchObject({ status: 'ok', stdout: expect.stringMatching(/^c\n\s+1 a\n\s+2 b\n$/) })
      const foreign = await globex.callTool({ name: 'sandbox_exec', arguments: { sandboxId: id, command: 'ls' } })
      expect(foreign.isError).toBe(true)
      expect((foreign.content as Array<{ text: string }>)[0]!.text).toBe(`no sandbox "${id}"; start one with sandbox_start`)
      expect((await globex.callTool({ name: 'sandbox_stop', arguments: { sandboxId: id } })).isError).toBe(true)
      expect((await acme.callTool({ name: 'sandbox_stop', arguments: { sandboxId: id } })).isError).toBe(false)
    } finally {
      await acme.close()
      await globex.close()
    }
    expect((await call(a, `/v1/sandboxes/${id}`)).status).toBe(404)
  },
  90_000,
)

test('a sandbox started through A is used through B; A dies; B says lost with its last snapshot; restore on B', async () => {
  const [a, b] = nodes as [(typeof nodes)[0], (typeof nodes)[0]]
  const started = await call(a, '/v1/sandboxes', { body: { adapter: 'process' } })
  expect(started.status).toBe(201)
  const id = started.json.id as string

  // Through B: files in and out, an exec, an exec streamed as server-sent events, the listing.
  expect((await call(b, `/v1/sandboxes/${id}/files/data/in.txt`, { method: 'PUT', raw: Buffer.from('alpha\nbeta\n') })).status).toBe(204)
  const exec = await call(b, `/v1/sandboxes/${id}/exec`, { body: { command: 'wc -l < data/in.txt > data/count.txt; cat data/count.txt' } })
  if (exec.json?.status !== 'ok') throw new Error(JSON.stringify(exec.json))
  expect(exec.json).toMatchObject({ status: 'ok', stdout: '2\n', adapter: 'process' })
  expect((await call(b, `/v1/sandboxes/${id}/files/data/count.txt`)).text).toBe('2\n')
  expect((await call(b, `/v1/sandboxes/${id}/files`)).json.files).toEqual([
    { path: 'data/count.txt', size: 2 },
    { path: 'data/in.txt', size: 11 },
  ])
  const stream = await fetch(`${b.url}/v1/sandboxes/${id}/exec`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ACME}`, accept: 'text/event-stream', 'content-type': 'application/json' },
    body: JSON.stringify({ command: 'echo first; sleep 0.5; echo second' }),
  })
  expect(stream.headers.get('content-type')).toContain('text/event-stream')
  const reader = stream.body!.getReader()
  let seen = ''
  // The first line arrives through B while the exec still runs on A: forwarded as it streams, not at the end.
  while (!seen.includes('first')) seen += new TextDecoder().decode((await reader.read()).value)
  expect(seen).not.toContain('event: result')
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) seen += new TextDecoder().decode(chunk.value)
  expect(seen).toMatch(/event: stdout\ndata: \{"chunk":"first\\n"\}[\s\S]*event: result\ndata: \{[^\n]*"status":"ok"/)
  const fromB = await call(b, '/v1/sandboxes')
  expect(fromB.json.sandboxes).toEqual([expect.objectContaining({ id, node: started.json.node ?? expect.any(String), state: 'running' })])

  // Both nodes are seen from either, with their adapters and slots.
  const adapters = await call(b, '/v1/adapters')
  expect(adapters.json.nodes).toHaveLength(2)
  expect(adapters.json.nodes.map((node: { url: string }) => node.url).sort()).toEqual([a.url, b.url].sort())
  expect(adapters.json.nodes[0].status.adapters.map((adapter: { name: string }) => adapter.name).sort()).toEqual(['process', 'shell'])

  // Another tenant: the id answers through either node exactly like a missing one.
  for (const node of [a, b]) {
    const foreign = await call(node, `/v1/sandboxes/${id}/exec`, { key: GLOBEX, body: { command: 'ls' } })
    const missing = await call(node, '/v1/sandboxes/sb-00000000000000000000/exec', { key: GLOBEX, body: { command: 'ls' } })
    expect(foreign.status).toBe(404)
    expect(foreign.json.error.message.replace(id, '<id>')).toBe(missing.json.error.message.replace('sb-00000000000000000000', '<id>'))
    expect((await call(node, '/v1/sandboxes', { key: GLOBEX })).json.sandboxes).toEqual([])
  }

  // A snapshot through B, then more work that the snapshot does not hold.
  const snapshot = await call(b, `/v1/sandboxes/${id}/snapshots`, { method: 'POST' })
  expect(snapshot.status).toBe(201)
  expect((await call(b, `/v1/sandboxes/${id}/exec`, { body: { command: 'echo later > late.txt' } })).json.status).toBe('ok')

  a.child.kill('SIGKILL')
  const deadline = Date.now() + 20_000
  let info = await call(b, `/v1/sandboxes/${id}`)
  while (info.json?.state !== 'lost' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    info = await call(b, `/v1/sandboxes/${id}`)
    // Between the kill and the heartbeat's expiry: a retryable 502 naming the node, never a hang or a 500.
    expect([200, 502]).toContain(info.status)
  }
  expect(info.json).toMatchObject({ id, state: 'lost', lastSnapshot: { id: snapshot.json.id, files: 2 } })
  const lost = await call(b, `/v1/sandboxes/${id}/exec`, { body: { command: 'ls' } })
  expect(lost.status).toBe(410)
  expect(lost.json.error.code).toBe('EXECGATE_SANDBOX_LOST')
  expect(lost.json.error.message).toContain(snapshot.json.id)
  expect((await call(b, '/v1/sandboxes')).json.sandboxes).toEqual([expect.objectContaining({ id, state: 'lost' })])
  // The library, too, says lost with the snapshot rather than a sandbox that would hang.
  const execgate = await library()
  try {
    await expect(execgate.sandboxes.find(id, { tenant: 'acme' })).rejects.toMatchObject({
      code: 'EXECGATE_SANDBOX_LOST',
      message: expect.stringContaining(snapshot.json.id),
    })
  } finally {
    await execgate.dispose()
  }

  // Restored on B from the snapshot in the bucket: the files as they were when it was taken.
  const restored = await call(b, '/v1/sandboxes', { body: { adapter: 'process', from: snapshot.json.id } })
  expect(restored.status).toBe(201)
  const read = await call(b, `/v1/sandboxes/${restored.json.id}/exec`, { body: { command: 'cat data/in.txt data/count.txt; ls' } })
  expect(read.json).toMatchObject({ status: 'ok', stdout: 'alpha\nbeta\n2\ndata\n' })
  expect((await call(b, '/v1/sandboxes', { key: GLOBEX, body: { adapter: 'shell', from: snapshot.json.id } })).status).toBe(404)

  // The lost one is forgotten by its tenant's DELETE.
  expect((await call(b, `/v1/sandboxes/${id}`, { method: 'DELETE' })).status).toBe(204)
  expect((await call(b, '/v1/sandboxes')).json.sandboxes.map((sandbox: { id: string }) => sandbox.id)).toEqual([restored.json.id])
  expect((await call(b, `/v1/sandboxes/${restored.json.id}`, { method: 'DELETE' })).status).toBe(204)
}, 120_000)
