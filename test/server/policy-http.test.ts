import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { DEFAULT_POLICY, profilesFromConfig } from '../../src/policy'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, GLOBEX, httpCaller } from '../servers/http-caller'
import { loosenings } from '../policy/loosenings'

/**
 * A tenant's profile over HTTP is a ceiling: a request body that asks for more of any limit is refused naming the
 * limit, before anything runs; a task is submitted and resumed only within it; another tenant's tasks cannot be
 * suspended or resumed (404, as a missing task). Real server on loopback, real quickjs, real SQLite task store.
 */

const TIGHT = {
  wallTimeMs: 3000,
  cpuTimeMs: 3000,
  memoryMb: 64,
  outputBytes: 32 * 1024,
  maxProcesses: 4,
  maxOutputs: 4,
  outputsBytes: 512 * 1024,
  hostCalls: { maxCount: 20, maxTotalMs: 1000 },
  network: 'none' as const,
  filesystem: 'read_only' as const,
  allowedImports: ['math', 'json'],
}

let execgate: Execgate
let server: RunningServer
let dataDir: string
beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-policy-http-'))
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir },
      security: { profiles: { tight: TIGHT } },
      server: { apiKeys: [`acme=${ACME}`, `globex=${GLOBEX}`], tenants: { acme: { profile: 'tight' }, globex: { profile: 'tight' } } },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 60_000)
afterAll(async () => {
  await server.shutdown()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

const call = httpCaller(() => server.url)
const tight = () => profilesFromConfig(execgate.config).tight!

async function settled(id: string, key: string) {
  for (;;) {
    const task = (await call(`/v1/tasks/${id}`, { key })).json
    if (['COMPLETED', 'FAILED', 'TERMINATED', 'SUSPENDED'].includes(task.state)) return task
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test('the table loosens every limit of the tenant profile', () => {
  expect(loosenings(tight()).map((item) => item.limit)).toEqual([
    'wallTimeMs',
    'wallTimeMs',
    'memoryMb',
    'memoryMb',
    'cpuTimeMs',
    'outputBytes',
    'maxProcesses',
    'maxOutputs',
    'outputsBytes',
    'hostCalls.maxCount',
    'hostCalls.maxTotalMs',
    'network',
    'filesystem',
    'allowedImports',
  ])
})

describe('POST /v1/executions with a body that loosens the profile', () => {
  test.each(loosenings({ ...DEFAULT_POLICY, ...TIGHT }).map((item) => [item.label, item] as const))(
    '%s: policy_violation naming the limit, nothing run',
    async (_label, item) => {
      const marker = `ran-${item.label}`
      const response = await call('/v1/executions', {
        key: ACME,
        body: { language: 'javascript', code: `console.log(${JSON.stringify(marker)}); 1`, ...item.request },
      })
      expect({ http: response.status, status: response.json.status, stdout: response.json.stdout }).toEqual({
        http: 200,
        status: 'policy_violation',
        stdout: '',
      })
      expect(response.json.message).toContain(item.limit)
      expect(response.json.message).toContain('may only tighten')
    },
  )

  test('the same limits, tightened, run', async () => {
    const response = await call('/v1/executions', {
      key: ACME,
      body: {
        language: 'javascript',
        code: '6 * 7',
        timeoutMs: 2000,
        memoryMb: 32,
        policy: { outputBytes: 1024, allowedImports: ['math'], hostCalls: { maxCount: 1 } },
      },
    })
    expect(response.json).toMatchObject({ status: 'ok', value: 42 })
  })
})

describe('tasks stay inside the tenant profile', () => {
  test.each(loosenings({ ...DEFAULT_POLICY, ...TIGHT }).map((item) => [item.label, item] as const))(
    'a task whose request loosens %s is refused or ends policy_violation (TERMINATED, docs/tasks.md), never run',
    async (_label, item) => {
      const marker = `task-ran-${item.label}`
      const created = await call('/v1/tasks', {
        key: ACME,
        body: { request: { language: 'javascript', code: `console.log(${JSON.stringify(marker)}); 1`, ...item.request } },
      })
      if (created.status !== 201) {
        expect({ status: created.status, names: String(created.json.error?.message).includes(item.limit) }).toEqual({
          status: 400,
          names: true,
        })
        return
      }
      const done = await settled(created.json.id, ACME)
      expect({ state: done.state, status: done.result?.status, stdout: done.result?.stdout ?? '' }).toEqual({
        state: 'TERMINATED',
        status: 'policy_violation',
        stdout: '',
      })
      expect(done.result.message).toContain(item.limit)
    },
  )

  test('resuming with looser limits than the profile allows does not run past them; within them, it runs', async () => {
    const blockers = await Promise.all(
      [0, 1, 2, 3].map(() =>
        call('/v1/tasks', {
          key: ACME,
          body: { request: { language: 'javascript', code: 'const t = Date.now(); while (Date.now() - t < 500) {}; 1' } },
        }),
      ),
    )
    const queued = await call('/v1/tasks', {
      key: ACME,
      body: { request: { language: 'javascript', code: 'console.log("resumed-run"); 2' } },
    })
    expect((await call(`/v1/tasks/${queued.json.id}/suspend`, { key: ACME, method: 'POST' })).json.state).toBe('SUSPENDED')
    const loosened = await call(`/v1/tasks/${queued.json.id}/resume`, {
      key: ACME,
      body: { memoryMb: TIGHT.memoryMb * 4, timeoutMs: TIGHT.wallTimeMs * 4 },
    })
    if (loosened.status === 200) {
      // Accepted for resumption, it still runs under the profile: refused before running, naming the limit.
      const done = await settled(queued.json.id, ACME)
      expect({ state: done.state, status: done.result?.status, stdout: done.result?.stdout ?? '' }).toEqual({
        state: 'TERMINATED',
        status: 'policy_violation',
        stdout: '',
      })
      expect(done.result.message).toMatch(/wallTimeMs|memoryMb/)
    } else {
      expect({ status: loosened.status, names: /wallTimeMs|memoryMb/.test(String(loosened.json.error?.message)) }).toEqual({
        status: 400,
        names: true,
      })
      expect((await call(`/v1/tasks/${queued.json.id}`, { key: ACME })).json.state).toBe('SUSPENDED')
      const tightened = await call(`/v1/tasks/${queued.json.id}/resume`, { key: ACME, body: { timeoutMs: 1000 } })
      expect(tightened.json.state).toBe('PENDING')
      expect(await settled(queued.json.id, ACME)).toMatchObject({ state: 'COMPLETED', result: { value: 2 } })
    }
    for (const blocker of blockers) await settled(blocker.json.id, ACME)
  }, 60_000)

  test("another tenant's task cannot be suspended, resumed or cancelled: 404, as a missing one, and nothing changes", async () => {
    const blockers = await Promise.all(
      [0, 1, 2, 3].map(() =>
        call('/v1/tasks', {
          key: ACME,
          body: { request: { language: 'javascript', code: 'const t = Date.now(); while (Date.now() - t < 500) {}; 1' } },
        }),
      ),
    )
    const mine = await call('/v1/tasks', { key: ACME, body: { request: { language: 'javascript', code: '3' } } })
    const id = mine.json.id as string
    const steal = await call(`/v1/tasks/${id}/suspend`, { key: GLOBEX, method: 'POST' })
    const missing = await call('/v1/tasks/no-such-task/suspend', { key: GLOBEX, method: 'POST' })
    expect({ status: steal.status, code: steal.json.error.code }).toEqual({ status: 404, code: 'EXECGATE_NOT_FOUND' })
    expect(steal.json.error.message).toContain(`no task "${id}" for tenant globex`)
    expect(missing.status).toBe(404)
    expect((await call(`/v1/tasks/${id}/suspend`, { key: ACME, method: 'POST' })).json.state).toBe('SUSPENDED')
    const resumeOthers = await call(`/v1/tasks/${id}/resume`, { key: GLOBEX, body: { timeoutMs: 1000 } })
    expect({ status: resumeOthers.status, code: resumeOthers.json.error.code }).toEqual({ status: 404, code: 'EXECGATE_NOT_FOUND' })
    expect((await call(`/v1/tasks/${id}`, { key: GLOBEX, method: 'DELETE' })).status).toBe(404)
    expect((await call(`/v1/tasks/${id}`, { key: ACME })).json.state).toBe('SUSPENDED')
    expect((await call(`/v1/tasks/${id}/resume`, { key: ACME, body: {} })).json.state).toBe('PENDING')
    expect(await settled(id, ACME)).toMatchObject({ state: 'COMPLETED', result: { value: 3 } })
    for (const blocker of blockers) await settled(blocker.json.id, ACME)
  }, 60_000)
})
