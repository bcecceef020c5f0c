import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startRedisServer, type RedisServer } from '../../bench/redis-server'
import { kill, redisClusterEnv, startServe, until, type Node } from '../fabric/cluster'

/**
 * The activity of every node (docs/console.md#activity): two `execgate serve` nodes on one redis-server, runs sent to
 * each; `GET /v1/activity` on either charts both nodes' runs (scope `deployment`, both node ids), each tenant only its
 * own, and a node that dies leaves its runs in the chart.
 *
 * Without redis-server the suite fails in beforeAll naming scripts/setup/redis.sh (never skipped).
 */

const ACME = 'acme-key-0123456789abcdef'
const GLOBEX = 'globex-key-0123456789abcdef'

let redis: RedisServer
let dataDir: string
const nodes: Node[] = []

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-activity-nodes-'))
  redis = await startRedisServer()
  const env = redisClusterEnv(
    { redisUrl: redis.url, prefix: 'activity-nodes', dataDir },
    { EXECGATE_API_KEYS: `acme=${ACME},globex=${GLOBEX}`, EXECGATE_FABRIC_LEDGER_ENABLED: 'false' },
  )
  nodes.push(...(await Promise.all([startServe(env), startServe(env)])))
}, 120_000)

afterAll(async () => {
  await Promise.all(nodes.map((started) => kill(started)))
  await redis?.stop()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

async function api<T>(node: Node, key: string, method: string, url: string, body?: unknown): Promise<T> {
  const response = await fetch(`${node.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${text}`)
  return JSON.parse(text) as T
}

interface Summary {
  scope: string
  nodes: string[]
  total: number
  statuses: Record<string, number>
  series: { adapter: string; count: number }[]
}

const run = (node: Node, key: string, code: string) => api(node, key, 'POST', '/v1/executions', { language: 'javascript', code })
const activity = (node: Node, key: string) => api<Summary>(node, key, 'GET', '/v1/activity?windowSeconds=300')

test("GET /v1/activity on either node charts both nodes' runs, each tenant its own, a dead node's runs kept", async () => {
  const [a, b] = nodes as [Node, Node]
  const adapters = (node: Node) => api<{ node: string }>(node, ACME, 'GET', '/v1/adapters')
  const ids = [(await adapters(a)).node, (await adapters(b)).node].sort()
  for (let index = 0; index < 3; index++) await run(a, ACME, `${index}`)
  await run(b, ACME, '1')
  await run(b, ACME, 'throw new Error("no")')
  await run(b, GLOBEX, '2')

  for (const node of [a, b]) {
    // Another node's runs arrive with its next batch (250 ms at most); this node's own before it answers.
    const acme = await until(
      () => activity(node, ACME),
      (summary) => summary.total >= 5,
      'the runs of both nodes',
      10_000,
    )
    expect(acme).toMatchObject({ scope: 'deployment', nodes: ids, total: 5, statuses: { ok: 4, error: 1 } })
    expect(acme.series).toEqual([expect.objectContaining({ adapter: 'quickjs', count: 5 })])
    expect(await activity(node, GLOBEX)).toMatchObject({ scope: 'deployment', total: 1, statuses: { ok: 1 } })
  }
  const globex = await activity(a, GLOBEX)
  expect(globex.nodes).toEqual([(await adapters(b)).node])

  // A dies: its runs stay in the deployment's chart, read through B.
  await kill(a)
  expect(await activity(b, ACME)).toMatchObject({ scope: 'deployment', nodes: ids, total: 5 })
}, 120_000)
