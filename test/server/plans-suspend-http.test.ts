import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, GLOBEX, httpCaller } from '../servers/http-caller'

/** POST /v1/plans/:id/suspend and /resume over real HTTP on loopback, a real SQLite store, two tenants, quickjs runs. */

let execgate: Execgate
let server: RunningServer
let dataDir: string

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-plans-suspend-http-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`] },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
  await execgate.execute({ language: 'javascript', code: '1' })
}, 60_000)

afterAll(async () => {
  await server.shutdown()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

const call = httpCaller(() => server.url)

const js = (id: string, code: string, dependsOn?: string[]) => ({ id, language: 'javascript', code, ...(dependsOn ? { dependsOn } : {}) })

test('suspend answers the plan SUSPENDED, resume RUNNING, and it completes; the event stream announces both', async () => {
  const created = await call('/v1/plans', {
    key: ACME,
    body: {
      steps: [
        js('slow', 'const t = Date.now(); while (Date.now() - t < 1500) {}; 20'),
        js('after', 'JSON.parse(await read_file("steps/slow/value.json")) + 1', ['slow']),
      ],
    },
  })
  const url = `/v1/plans/${created.json.id}`
  while ((await call(url, { key: ACME })).json.steps[0].state !== 'RUNNING') await new Promise((resolve) => setTimeout(resolve, 10))
  const suspended = await call(`${url}/suspend`, { key: ACME, method: 'POST' })
  expect(suspended.status).toBe(200)
  expect(suspended.json).toMatchObject({ state: 'SUSPENDED', steps: [{ state: 'SUSPENDED' }, { state: 'SUSPENDED' }] })
  const again = await call(`${url}/suspend`, { key: ACME, method: 'POST' })
  expect([again.status, again.json.error.code, again.json.error.message]).toEqual([
    409,
    'EXECGATE_PLAN_CONFLICT',
    `[execgate] plan ${created.json.id} is SUSPENDED and cannot be suspended (only RUNNING plans can)`,
  ])
  expect((await call('/v1/plans?state=SUSPENDED', { key: ACME })).json.plans.map((plan: { id: string }) => plan.id)).toEqual([
    created.json.id,
  ])

  const resumed = await call(`${url}/resume`, { key: ACME, method: 'POST' })
  expect([resumed.status, resumed.json.state]).toEqual([200, 'RUNNING'])
  // The stream ends with the plan.
  const stream = (await call(`${url}/events`, { key: ACME })).text
  const moves = [...stream.matchAll(/^data: (.*)$/gm)]
    .map((match) => JSON.parse(match[1]!))
    .filter((event) => event.type === 'plan')
    .map((event) => `${event.from}>${event.to}`)
  expect(moves).toEqual(['null>RUNNING', 'RUNNING>SUSPENDED', 'SUSPENDED>RUNNING', 'RUNNING>COMPLETED'])
  expect((await call(url, { key: ACME })).json).toMatchObject({
    state: 'COMPLETED',
    steps: [{ result: { value: 20 } }, { result: { value: 21 } }],
  })
  const late = await call(`${url}/resume`, { key: ACME, method: 'POST' })
  expect([late.status, late.json.error.message]).toEqual([
    409,
    `[execgate] plan ${created.json.id} is COMPLETED and cannot be resumed (only SUSPENDED plans can)`,
  ])
}, 30_000)

test(
  "another tenant's plan answers 404 to suspend and resume, exactly like a missing one; the " + 'OpenAPI document lists both routes',
  async () => {
    const created = await call('/v1/plans', {
      key: GLOBEX,
      body: { steps: [js('slow', 'const t = Date.now(); while (Date.now() - t < 1000) {}; 1')] },
    })
    for (const action of ['suspend', 'resume']) {
      for (const id of [created.json.id, 'no-such-plan']) {
        const answer = await call(`/v1/plans/${id}/${action}`, { key: ACME, method: 'POST' })
        expect([answer.status, answer.json.error.code, answer.json.error.message]).toEqual([
          404,
          'EXECGATE_NOT_FOUND',
          `[execgate] no plan "${id}" for tenant acme`,
        ])
      }
    }
    expect((await call(`/v1/plans/${created.json.id}`, { key: GLOBEX })).json.state).not.toBe('SUSPENDED')
    const { paths } = (await call('/docs/json')).json
    expect(Object.keys(paths)).toEqual(expect.arrayContaining(['/v1/plans/{id}/suspend', '/v1/plans/{id}/resume']))
    await call(`/v1/plans/${created.json.id}`, { key: GLOBEX, method: 'DELETE' })
  },
)
