import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createExecgate, type Execgate, type PlanStreamItem } from '../../src'
import { ExecgateClient } from '../../src/client'
import { serve, type RunningServer } from '../../src/server/serve'
import { FakeConverse } from '../fakes/converse-server'
import { ACME, GLOBEX, httpCaller } from '../servers/http-caller'

/** The plan routes and MCP tools over real HTTP on loopback, a real SQLite store, two tenants, a scripted reflector. */

process.env.AWS_ACCESS_KEY_ID = 'AKIDEXECGATETEST'
process.env.AWS_SECRET_ACCESS_KEY = 'execgate-test-secret'

const replies: string[] = []
const converse = new FakeConverse(replies)

let execgate: Execgate
let server: RunningServer
let dataDir: string

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-plans-http-'))
  const endpoint = await converse.listen()
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs', 'monty'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir, plans: { reflector: { modelId: 'scripted-reflector', endpoint } } },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`] },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
  await execgate.execute({ language: 'javascript', code: '1' })
}, 60_000)

afterAll(async () => {
  await server.shutdown()
  await converse.close()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

const call = httpCaller(() => server.url)

/** The SSE stream's events: id, event type and data. */
function sse(text: string) {
  return text
    .split('\n\n')
    .filter(Boolean)
    .map((block) => {
      const field = (name: string) =>
        block
          .split('\n')
          .find((line) => line.startsWith(`${name}: `))
          ?.slice(name.length + 2)
      return { id: Number(field('id')), type: field('event'), data: JSON.parse(field('data') ?? 'null') }
    })
}

const js = (id: string, code: string, dependsOn?: string[]) => ({ id, language: 'javascript', code, ...(dependsOn ? { dependsOn } : {}) })

test('POST /v1/plans answers 201; GET shows steps, versions and what a revision changed; events stream as SSE in order', async () => {
  replies.push(JSON.stringify({ note: 'use the input', steps: [js('b', 'JSON.parse(await read_file("steps/a/value.json")) * 3', ['a'])] }))
  const created = await call('/v1/plans', { key: ACME, body: { goal: 'triple it', steps: [js('a', '14'), js('b', 'missing * 3', ['a'])] } })
  expect(created.status).toBe(201)
  expect(created.headers.get('location')).toBe(`/v1/plans/${created.json.id}`)
  expect(created.json).toMatchObject({ state: 'RUNNING', tenant: 'acme', version: 1, steps: [{ id: 'a' }, { id: 'b' }] })
  // The stream ends with the plan.
  const stream = await call(`/v1/plans/${created.json.id}/events`, { key: ACME })
  expect(stream.headers.get('content-type')).toBe('text/event-stream')
  const events = sse(stream.text)
  expect(events.map((event) => event.id)).toEqual([...events.map((event) => event.id)].sort((x, y) => x - y))
  expect(events.every((event) => event.data.seq === event.id && event.data.type === event.type)).toBe(true)
  const plans = events.filter((event) => event.type === 'plan').map((event) => `${event.data.from}>${event.data.to}`)
  expect(plans).toEqual(['null>RUNNING', 'RUNNING>REVISING', 'REVISING>RUNNING', 'RUNNING>COMPLETED'])
  expect(events.filter((event) => event.type === 'revision').map((event) => [event.data.accepted, event.data.changes])).toEqual([
    [true, { added: [], removed: [], changed: ['b'], reused: ['a'] }],
  ])
  const plan = (await call(`/v1/plans/${created.json.id}`, { key: ACME })).json
  expect(plan).toMatchObject({
    state: 'COMPLETED',
    version: 2,
    steps: [
      { id: 'a', state: 'COMPLETED', reusedFrom: 1 },
      { id: 'b', state: 'COMPLETED', result: { value: 42 } },
    ],
  })
  expect(plan.versions[1]).toMatchObject({
    version: 2,
    note: 'use the input',
    changes: { changed: ['b'], reused: ['a'] },
    reason: expect.stringMatching(/^revision 1: step b failed: error: ReferenceError/),
  })
  expect(plan.owner).toBeUndefined()
  // Last-Event-ID resumes after what was seen.
  const resumed = sse(
    (await call(`/v1/plans/${created.json.id}/events`, { key: ACME, headers: { 'last-event-id': String(events.at(-3)!.id) } })).text,
  )
  expect(resumed.map((event) => event.id)).toEqual(events.slice(-2).map((event) => event.id))
})

test("the events carry a step's display() items as output events, with no id, before the step's end", async () => {
  // Busy first: outputs are live only, so the stream must be open before the step makes one.
  const code = "let t = Date.now(); while (Date.now() - t < 1000) {}\ndisplay([{ region: 'north', revenue: 15 }])\n7"
  const created = await call('/v1/plans', { key: ACME, body: { goal: 'show a table', steps: [js('a', code)] } })
  expect(created.status).toBe(201)
  const events = sse((await call(`/v1/plans/${created.json.id}/events`, { key: ACME })).text)
  const outputs = events.filter((event) => event.type === 'output')
  expect(outputs).toEqual([
    {
      id: Number.NaN,
      type: 'output',
      data: {
        type: 'output',
        planId: created.json.id,
        stepId: 'a',
        taskId: expect.any(String),
        attempt: 1,
        index: 0,
        output: { kind: 'table', columns: ['region', 'revenue'], rows: [['north', 15]], rowCount: 1, bytes: expect.any(Number) },
      },
    },
  ])
  const stepEnd = events.findIndex((event) => event.type === 'step' && event.data.stepId === 'a' && event.data.to === 'COMPLETED')
  expect(events.indexOf(outputs[0]!)).toBeLessThan(stepEnd)
  const plan = (await call(`/v1/plans/${created.json.id}`, { key: ACME })).json
  expect(plan.steps[0].result.outputs).toEqual([outputs[0]!.data.output])
})

async function settledPlan(id: string) {
  for (;;) {
    const plan = (await call(`/v1/plans/${id}`, { key: ACME })).json
    if (['COMPLETED', 'FAILED', 'TERMINATED', 'SUSPENDED'].includes(plan.state)) return plan
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Each output event as `step index`, each step's end as `step COMPLETED`, in the stream's order. */
const outputsAndEnds = (events: { type?: string; data: { stepId?: string; index?: number; to?: string } }[]) =>
  events.flatMap((event) =>
    event.type === 'output'
      ? [`${event.data.stepId} output ${event.data.index}`]
      : event.type === 'step' && event.data.to === 'COMPLETED'
        ? [`${event.data.stepId} COMPLETED`]
        : [],
  )

test("a reader that connects after the plan ended gets each step's outputs from its result, once, before the step's end", async () => {
  const created = await call('/v1/plans', {
    key: ACME,
    body: {
      steps: [js('a', 'display({ part: 1 })\ndisplay({ part: 2 })\n1'), js('b', "display([{ region: 'north', revenue: 15 }])\n2", ['a'])],
    },
  })
  const plan = await settledPlan(created.json.id)
  expect(plan.state).toBe('COMPLETED')
  const events = sse((await call(`/v1/plans/${created.json.id}/events`, { key: ACME })).text)
  expect(outputsAndEnds(events)).toEqual(['a output 0', 'a output 1', 'a COMPLETED', 'b output 0', 'b COMPLETED'])
  const outputs = events.filter((event) => event.type === 'output').map((event) => event.data)
  expect(outputs.map((item) => item.output)).toEqual([...plan.steps[0].result.outputs, ...plan.steps[1].result.outputs])
  expect(outputs[2]).toMatchObject({ planId: created.json.id, stepId: 'b', taskId: plan.steps[1].taskId, attempt: 1, index: 0 })
  // The client reads the same stream: the library's late reader gets them too.
  const client = new ExecgateClient({ url: server.url, apiKey: ACME })
  const read: PlanStreamItem[] = []
  for await (const item of client.plans.events(created.json.id)) read.push(item)
  expect(read.filter((item) => item.type === 'output').map((item) => item.output)).toEqual(outputs.map((item) => item.output))
  // Resumed past a step's end (Last-Event-ID), its outputs are not sent again: only b's.
  const aEnd = events.find((event) => event.type === 'step' && event.data.stepId === 'a' && event.data.to === 'COMPLETED')!
  const resumed = sse(
    (await call(`/v1/plans/${created.json.id}/events`, { key: ACME, headers: { 'last-event-id': String(aEnd.id) } })).text,
  )
  expect(outputsAndEnds(resumed)).toEqual(['b output 0', 'b COMPLETED'])
})

test('a reader that connects while a step runs gets the outputs it made before and after, each once', async () => {
  const code = [
    'display({ part: 1 })',
    'let t = Date.now(); while (Date.now() - t < 1500) {}',
    'display({ part: 2 })',
    't = Date.now(); while (Date.now() - t < 500) {}',
    '1',
  ].join('\n')
  const created = await call('/v1/plans', { key: ACME, body: { steps: [js('a', code)] } })
  // Connects once the step runs (its first item is made then): that item comes from the stored result, the second live.
  for (;;) {
    const plan = (await call(`/v1/plans/${created.json.id}`, { key: ACME })).json
    if (plan.steps[0].state !== 'PENDING' && plan.steps[0].state !== 'SPAWNING') break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  await new Promise((resolve) => setTimeout(resolve, 300))
  const events = sse((await call(`/v1/plans/${created.json.id}/events`, { key: ACME })).text)
  // The item heard live goes out as it comes (on a loaded machine both may be missed); the rest at the step's end.
  const seen = outputsAndEnds(events)
  expect(seen.at(-1)).toBe('a COMPLETED')
  expect(seen.slice(0, -1).sort()).toEqual(['a output 0', 'a output 1'])
  const parts = events.filter((event) => event.type === 'output').map((event) => [event.data.index, event.data.output.data.part])
  expect(parts.sort()).toEqual([
    [0, 1],
    [1, 2],
  ])
})

test("another tenant's plan answers 404 like a missing one; lists are the tenant's and paged", async () => {
  const first = await call('/v1/plans', { key: GLOBEX, body: { steps: [js('only', '1')] } })
  const second = await call('/v1/plans', { key: GLOBEX, body: { steps: [js('only', '2')] } })
  const missing = await call('/v1/plans/no-such-plan', { key: ACME })
  expect(missing.status).toBe(404)
  for (const [method, suffix] of [
    ['GET', ''],
    ['DELETE', ''],
    ['GET', '/events'],
  ] as const) {
    const foreign = await call(`/v1/plans/${first.json.id}${suffix}`, { key: ACME, method })
    expect(foreign.status).toBe(404)
    expect(foreign.json.error.code).toBe('EXECGATE_NOT_FOUND')
    expect(foreign.json.error.message).toBe(`[execgate] no plan "${first.json.id}" for tenant acme`)
  }
  const page1 = await call('/v1/plans?limit=1', { key: GLOBEX })
  expect(page1.json.plans.map((item: { id: string }) => item.id)).toEqual([first.json.id])
  const page2 = await call(`/v1/plans?limit=1&cursor=${page1.json.nextCursor}`, { key: GLOBEX })
  expect(page2.json.plans.map((item: { id: string }) => item.id)).toEqual([second.json.id])
  expect(page2.json.nextCursor).toBeUndefined()
  // Newest first (the console's list), paged the other way.
  const newest = await call('/v1/plans?order=newest&limit=1', { key: GLOBEX })
  expect(newest.json.plans.map((item: { id: string }) => item.id)).toEqual([second.json.id])
  const older = await call(`/v1/plans?order=newest&limit=1&cursor=${newest.json.nextCursor}`, { key: GLOBEX })
  expect([older.json.plans.map((item: { id: string }) => item.id), older.json.nextCursor]).toEqual([[first.json.id], undefined])
  expect((await call('/v1/plans?order=random', { key: GLOBEX })).json.error.message).toBe(
    '[execgate] invalid request: order must be oldest or newest',
  )
  expect((await call('/v1/plans', { key: ACME })).json.plans.map((item: { id: string }) => item.id)).not.toContain(first.json.id)
  expect((await call('/v1/plans?state=DONE', { key: ACME })).status).toBe(400)
})

test('DELETE terminates the plan and its running step; again is 409; a bad plan is 400 naming the problem', async () => {
  const created = await call('/v1/plans', {
    key: ACME,
    body: { steps: [js('slow', 'const t = Date.now(); while (Date.now() - t < 3000) {}; 1'), js('after', '1', ['slow'])] },
  })
  for (;;) {
    const plan = (await call(`/v1/plans/${created.json.id}`, { key: ACME })).json
    if (plan.steps[0].state === 'RUNNING') break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const deleted = await call(`/v1/plans/${created.json.id}`, { key: ACME, method: 'DELETE' })
  expect(deleted.json).toMatchObject({ state: 'TERMINATED', steps: [{ state: 'TERMINATED' }, { state: 'TERMINATED' }] })
  const again = await call(`/v1/plans/${created.json.id}`, { key: ACME, method: 'DELETE' })
  expect(again.status).toBe(409)
  expect(again.json.error.code).toBe('EXECGATE_PLAN_CONFLICT')
  const bad = await call('/v1/plans', { key: ACME, body: { steps: [js('a', '1', ['b']), js('b', '1', ['a'])] } })
  expect(bad.status).toBe(400)
  expect(bad.json.error.message).toContain('dependency cycle: a -> b -> a')
})

test("MCP submit_plan and get_plan, as the calling tenant's plans", async () => {
  const client = new Client({ name: 'execgate-test', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${GLOBEX}` } } }),
  )
  try {
    const submitted = await client.callTool({
      name: 'submit_plan',
      arguments: {
        steps: [
          { id: 'x', language: 'python', code: '6 * 7' },
          { id: 'y', language: 'javascript', code: 'JSON.parse(await read_file("steps/x/value.json")) + 1', dependsOn: ['x'] },
        ],
      },
    })
    const id = (submitted.structuredContent as { id: string }).id
    expect(submitted.structuredContent).toMatchObject({ state: 'RUNNING', tenant: 'globex' })
    const got = await client.callTool({ name: 'get_plan', arguments: { id, waitMs: 10_000 } })
    expect(got.structuredContent).toMatchObject({
      state: 'COMPLETED',
      steps: [
        { id: 'x', result: { value: 42 } },
        { id: 'y', result: { value: 43 } },
      ],
    })
    expect((got.content as Array<{ text: string }>)[0]!.text).toBe(
      `plan ${id} is COMPLETED (version 1, 0 of 3 revisions used): every step completed ` +
        `(version 1)\n- x: COMPLETED value: 42\n- y: COMPLETED value: 43`,
    )
    expect((await call(`/v1/plans/${id}`, { key: ACME })).status).toBe(404)
  } finally {
    await client.close()
  }
})
