import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'
import { createExecgate } from '../../../src'
import { ACME, GLOBEX } from '../../servers/http-caller'
import { kill, startServe, type Node } from '../cluster'

/**
 * Sessions across nodes, as a deployment runs them: two `execgate serve` processes of the built CLI on loopback and one
 * redis-server. A session started through node A is used through node B (B forwards the call to A, which holds the
 * interpreter's state), for monty and quickjs; another tenant's session of the same id is its own. A is killed with
 * SIGKILL: while its heartbeat lasts, B answers 502 EXECGATE_SESSION_ELSEWHERE (never a fresh session); once A is gone,
 * B restores the monty session from the state saved after its last call (its workspace files too), and says the quickjs
 * session was lost with
 * its node (EXECGATE_SESSION_LOST), once, the next call starting afresh.
 */

/** Long enough that the calls right after the kill still find A alive by its heartbeat (gone after three beats). */
const HEARTBEAT_MS = 1500

let redis: RedisServer
let root: string
let a: Node
let b: Node

function env(name: string): NodeJS.ProcessEnv {
  fs.mkdirSync(path.join(root, name), { recursive: true })
  return {
    ...process.env,
    EXECGATE_LOG_LEVEL: 'warn',
    EXECGATE_READINESS_ENABLED: 'false',
    EXECGATE_EXECUTION_ENABLED: 'monty,quickjs',
    EXECGATE_SERVER_API_KEYS: `acme=${ACME},globex=${GLOBEX}`,
    // A session's workspace files readable by its calls (read_file), to see them after a takeover.
    EXECGATE_SECURITY_DEFAULT_POLICY_FILESYSTEM: 'sandboxed',
    EXECGATE_FABRIC_STORE: 'redis',
    EXECGATE_FABRIC_REDIS_URL: redis.url,
    EXECGATE_FABRIC_NODE_HEARTBEAT_MS: String(HEARTBEAT_MS),
    EXECGATE_FABRIC_DATA_DIR: path.join(root, name),
  }
}

async function run(node: Node, body: Record<string, unknown>, key = ACME) {
  const response = await fetch(`${node.url}/v1/executions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  })
  return { status: response.status, retryAfter: response.headers.get('retry-after'), json: (await response.json()) as any }
}

const python = (code: string, sessionId: string) => ({ language: 'python', code, sessionId })
const javascript = (code: string, sessionId: string) => ({ language: 'javascript', code, sessionId, adapter: 'quickjs' })

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-sessions-nodes-'))
  redis = await startRedisServer()
  ;[a, b] = await Promise.all([startServe(env('a')), startServe(env('b'))])
}, 90_000)

afterAll(async () => {
  for (const node of [a, b]) if (node) await kill(node)
  await redis?.stop()
  fs.rmSync(root, { recursive: true, force: true })
}, 30_000)

test('sessions live on one node, are reached through any, and outlive their node where their state can move', async () => {
  // Started through A, used through B: B forwards to A, so the state is the one A's interpreter holds. Its
  // workspace holds a file (the request's), kept with its state.
  expect(
    (await run(a, { ...python('x = 41', 'calc'), files: [{ path: 'notes/kept.txt', content: 'kept with the state' }] })).json.status,
  ).toBe('ok')
  const throughB = await run(b, python('x = x + 1\nx', 'calc'))
  expect(throughB.status).toBe(200)
  expect(throughB.json).toMatchObject({ status: 'ok', adapter: 'monty', value: 42 })
  expect((await run(a, python('x', 'calc'))).json.value).toBe(42)

  expect((await run(a, javascript('globalThis.n = 5', 'counter'))).json.status).toBe('ok')
  expect((await run(b, javascript('n * 2', 'counter'))).json).toMatchObject({ status: 'ok', adapter: 'quickjs', value: 10 })

  // Another tenant's session of the same id is its own, on either node.
  const foreign = await run(b, python('x', 'calc'), GLOBEX)
  expect(foreign.json.status).toBe('error')
  expect(foreign.json.error.type).toBe('NameError')

  // A dies. While its heartbeat has not expired, B cannot reach it and says so: retry, never a fresh session.
  await kill(a)
  const meanwhile = await run(b, javascript('n', 'counter'))
  expect(meanwhile.status).toBe(502)
  expect(meanwhile.retryAfter).toBe('1')
  expect(meanwhile.json.error.code).toBe('EXECGATE_SESSION_ELSEWHERE')
  expect(meanwhile.json.error.message).toMatch(/session "counter" lives on node node-\w+/)

  // Once A is gone by its heartbeat: monty's session continues on B from the state its last call left.
  await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS * 3 + 500))
  const restored = await run(b, python('x = x + 1\nx', 'calc'))
  expect(restored.json).toMatchObject({ status: 'ok', adapter: 'monty', value: 43 })
  expect(restored.json.message).toMatch(
    /restored on this node from the state its last call left with its 1 workspace file \(its node node-\w+ is gone\)/,
  )
  expect((await run(b, python('x', 'calc'))).json.value).toBe(43)
  // Its workspace came too: the session's file, read on B by a call of the same session.
  const file = await run(b, javascript('await read_file("notes/kept.txt")', 'calc'))
  expect(file.json).toMatchObject({ status: 'ok', value: 'kept with the state' })

  // quickjs's state cannot move: B says it was lost with its node, once; the next call starts a new session.
  const lost = await run(b, javascript('n', 'counter'))
  expect(lost.json.status).toBe('invalid_request')
  expect(lost.json.error.code).toBe('EXECGATE_SESSION_LOST')
  expect(lost.json.message).toMatch(/session "counter" is lost: it lived on node node-\w+, which is gone .* quickjs state cannot move/)
  expect((await run(b, javascript('typeof n', 'counter'))).json).toMatchObject({ status: 'ok', value: 'undefined' })

  // The other tenant's session of the same id was B's own all along: untouched by A's death.
  expect((await run(b, python('x = 7\nx', 'calc'), GLOBEX)).json.value).toBe(7)
}, 120_000)

test('the library (and MCP) on a node that does not hold the session answers where it lives, never a fresh one', async () => {
  const open = () =>
    createExecgate({
      overrides: {
        execution: { enabled: ['monty'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: { store: 'redis', redisUrl: redis.url, dataDir: root, nodeHeartbeatMs: HEARTBEAT_MS },
      },
    })
  const [first, second] = await Promise.all([open(), open()])
  try {
    // Advertised as `execgate serve` does: a node others could reach (nobody calls these URLs here).
    await first.sandboxes.advertise('http://127.0.0.1:9/first')
    await second.sandboxes.advertise('http://127.0.0.1:9/second')
    expect((await first.execute({ language: 'python', code: 'y = 3', sessionId: 'lib' })).status).toBe('ok')
    expect(await second.locateSession('lib')).toMatchObject({ kind: 'node', node: { id: first.sandboxes.nodeId } })
    const elsewhere = await second.execute({ language: 'python', code: 'y', sessionId: 'lib' })
    expect(elsewhere.status).toBe('unavailable')
    expect(elsewhere.error?.code).toBe('EXECGATE_SESSION_ELSEWHERE')
    expect(elsewhere.message).toContain(`lives on node ${first.sandboxes.nodeId} (http://127.0.0.1:9/first)`)
    expect((await first.execute({ language: 'python', code: 'y', sessionId: 'lib' })).value).toBe(3)
    // Closed on its node: it leaves the registry, and the id is free for any node.
    expect(await first.closeSession('lib')).toBe(true)
    expect(await second.locateSession('lib')).toEqual({ kind: 'new' })
  } finally {
    await Promise.all([first.dispose(), second.dispose()])
  }
}, 60_000)
