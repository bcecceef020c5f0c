import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { PlanView } from '../../../src/fabric/plans'
import type { Task } from '../../../src/fabric/tasks'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'
import { call, kill, redisClusterEnv, startServe, startWorker, until, type Node } from '../cluster'

/**
 * Rich outputs (`event: output`) to readers on any node (docs/tasks.md#events): two `execgate serve` nodes that run
 * nothing and one `execgate worker` on one redis-server. A task's (and a plan step's) code calls display(), then keeps
 * running for seconds; a reader of its events on a serve node (not the process that runs it) gets the output while
 * the task is still RUNNING, carried by Redis pub/sub, and once, before the task's end. Before, only a reader in the
 * worker's process heard it: the serve nodes' streams carried the transitions alone.
 *
 * Without redis-server the suite fails in beforeAll naming scripts/setup/redis.sh (never skipped).
 */

const PREFIX = 'outputs-multi-node'

let redis: RedisServer
let dataDir: string
const nodes: Node[] = []

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-outputs-multi-node-'))
  redis = await startRedisServer()
  const env = redisClusterEnv(
    { redisUrl: redis.url, prefix: PREFIX, dataDir },
    { EXECGATE_FABRIC_SERVE_RUNS_TASKS: 'false', EXECGATE_FABRIC_LEDGER_ENABLED: 'false' },
  )
  nodes.push(...(await Promise.all([startServe(env), startServe(env), startWorker(env)])))
}, 120_000)

afterAll(async () => {
  await Promise.all(nodes.map((started) => kill(started)))
  await redis?.stop()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

interface Sse {
  event: string
  data: Record<string, unknown>
  /** What `probe` answered when the event arrived (the task's or plan's state then). */
  seenWhile?: string
}

/** Reads a server-sent event stream to its end; on each `event: output` asks `probe` (before reading on). */
async function readStream(url: string, probe: () => Promise<string>): Promise<Sse[]> {
  const events: Sse[] = []
  const response = await fetch(url)
  const decoder = new TextDecoder()
  let buffered = ''
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true })
    const blocks = buffered.split('\n\n')
    buffered = blocks.pop()!
    for (const block of blocks) {
      const event = /^event: (.*)$/m.exec(block)?.[1]
      const data = /^data: (.*)$/m.exec(block)?.[1]
      if (!event || !data) continue
      const parsed: Sse = { event, data: JSON.parse(data) as Record<string, unknown> }
      if (event === 'output') parsed.seenWhile = await probe()
      events.push(parsed)
    }
  }
  return events
}

// Displays an item, then stays busy for 3 s: an output relayed live reaches the reader while the task still runs.
const CODE = ['display({ made: "on the worker" })', 'const t = Date.now(); while (Date.now() - t < 3000) {}', '7'].join('\n')

test("a task's rich output reaches a reader on another node while the task runs, once, before its end", async () => {
  const [nodeA, nodeB] = nodes.filter((started) => started.url)
  const first = await call<Task>(nodeA!, 'POST', '/v1/tasks', {
    request: { language: 'javascript', code: 'const t = Date.now(); while (Date.now() - t < 1500) {}; 1' },
  })
  // The reader is there before the task can start: it waits for its dependency.
  const task = await call<Task>(nodeA!, 'POST', '/v1/tasks', { request: { language: 'javascript', code: CODE }, dependencies: [first.id] })
  const events = await readStream(
    `${nodeB!.url}/v1/tasks/${task.id}/events`,
    async () => (await call<Task>(nodeB!, 'GET', `/v1/tasks/${task.id}`)).state,
  )
  const summary = events.map((event) =>
    event.event === 'transition' ? String(event.data.to) : `output ${String(event.data.index)} ${event.seenWhile}`,
  )
  expect(summary).toEqual(['PENDING', 'SPAWNING', 'RUNNING', 'output 0 RUNNING', 'COMPLETED'])
  expect(events[3]!.data).toMatchObject({ index: 0, attempt: 1, output: { kind: 'json', data: { made: 'on the worker' } } })
}, 60_000)

test("a plan step's rich output reaches a reader of the plan on another node while the step runs", async () => {
  const [nodeA, nodeB] = nodes.filter((started) => started.url)
  const plan = await call<PlanView>(nodeA!, 'POST', '/v1/plans', {
    steps: [
      { id: 'wait', language: 'javascript', code: 'const t = Date.now(); while (Date.now() - t < 1500) {}; 1' },
      { id: 'show', language: 'javascript', code: CODE, dependsOn: ['wait'] },
    ],
  })
  const events = await readStream(
    `${nodeB!.url}/v1/plans/${plan.id}/events`,
    async () => (await call<PlanView>(nodeB!, 'GET', `/v1/plans/${plan.id}`)).steps.find((step) => step.id === 'show')!.state,
  )
  const outputs = events.filter((event) => event.event === 'output')
  expect(outputs.map((event) => [event.data.stepId, event.data.index, event.seenWhile])).toEqual([['show', 0, 'RUNNING']])
  expect(outputs[0]!.data).toMatchObject({ planId: plan.id, output: { kind: 'json', data: { made: 'on the worker' } } })
  const done = await until(
    () => call<PlanView>(nodeB!, 'GET', `/v1/plans/${plan.id}`),
    (view) => view.state === 'COMPLETED',
    'the plan',
  )
  expect(done.steps.map((step) => step.result?.value)).toEqual([1, 7])
}, 60_000)
