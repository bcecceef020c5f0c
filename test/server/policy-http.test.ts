import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../src'
import { DEFAULT_POLICY, profilesFromConfig } from '../../src/policy'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, GLOBEX, httpCaller } from '../servers/http-caller'
import { loosenings } from '../policy/loosenings'
import { ExecgateClient } from '../../src/client'

/**
 * A tenant's profile over HTTP is a ceiling: a request body that asks for more of any limit is refused naming the
 * limit, before anything runs; a task or a plan is submitted and resumed only within it (a looser task or plan step is refused at
 * the submit, a looser resume at the resume, over HTTP, through the library and the client); a plan's resume changes its
 * held steps' limits only within it; another tenant's tasks and plans cannot be suspended or resumed (404, as missing).
 * Real server on loopback, real quickjs, real SQLite task store.
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

/** A task's output cap, and what it prints: more than the cap, well within the profile's 32 KiB. */
const HELD_OUTPUT_BYTES = 64
const PRINTED = 'x'.repeat(200)

/** A task SUSPENDED by its own output cap (resource exhaustion, docs/tasks.md): held with no race against a run. */
async function exhaustedTask(key: string): Promise<string> {
  const created = await call('/v1/tasks', {
    key,
    body: {
      request: { language: 'javascript', code: `console.log(${JSON.stringify(PRINTED)}); 7`, policy: { outputBytes: HELD_OUTPUT_BYTES } },
    },
  })
  expect(created.status).toBe(201)
  const task = await settled(created.json.id, key)
  expect({ state: task.state, reason: task.reason.split(':')[0] }).toEqual({
    state: 'SUSPENDED',
    reason: 'resource_exhaustion (output_limit)',
  })
  return task.id
}

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

/** Every loosening a task can carry: the request's (the table's), and the task's own timeoutMs above the profile's wall time. */
const taskLoosenings = () => [
  ...loosenings({ ...DEFAULT_POLICY, ...TIGHT }).map((item) => ({ label: item.label, spec: { request: item.request }, limit: item.limit })),
  { label: 'task timeoutMs', spec: { timeoutMs: TIGHT.wallTimeMs + 1, request: {} }, limit: 'wallTimeMs' },
]

describe('tasks stay inside the tenant profile', () => {
  test.each(taskLoosenings().map((item) => [item.label, item] as const))(
    'a task that loosens %s is refused at submit: 400 EXECGATE_SUBMIT_REFUSED naming the limit, nothing stored or run',
    async (_label, item) => {
      const intentId = `loosened-${item.label.replace(/[^A-Za-z0-9]/g, '-')}`
      const created = await call('/v1/tasks', {
        key: ACME,
        body: { ...item.spec, intentId, request: { language: 'javascript', code: '1', ...item.spec.request } },
      })
      expect({ status: created.status, code: created.json.error?.code }).toEqual({ status: 400, code: 'EXECGATE_SUBMIT_REFUSED' })
      expect(created.json.error.message).toContain('the task was not submitted')
      expect(created.json.error.message).toContain(item.limit)
      expect(created.json.error.message).toContain('may only tighten')
      expect((await call(`/v1/tasks?intentId=${intentId}`, { key: ACME })).json.tasks).toEqual([])
    },
  )

  test('through the library a batch with one loosened task is refused whole, naming it; tightened it is stored and runs', async () => {
    const acme = { tenant: 'acme', profile: 'tight' }
    const spec = (memoryMb: number) => ({
      intentId: 'library-batch',
      request: { language: 'javascript' as const, code: '6 * 7', memoryMb },
    })
    await expect(execgate.tasks.submitMany([spec(32), spec(TIGHT.memoryMb + 1)], acme)).rejects.toMatchObject({
      code: 'EXECGATE_SUBMIT_REFUSED',
      message: expect.stringContaining(
        'tasks[1] was not submitted: the request may only tighten the policy: memoryMb 65 is above the allowed 64',
      ),
    })
    await expect(execgate.tasks.submit(spec(TIGHT.memoryMb + 1), acme)).rejects.toMatchObject({ code: 'EXECGATE_SUBMIT_REFUSED' })
    expect((await execgate.tasks.list({ intentId: 'library-batch' }, acme)).tasks).toEqual([])
    const [task] = await execgate.tasks.submitMany([spec(TIGHT.memoryMb)], acme)
    expect(await execgate.tasks.wait(task!.id, { ...acme, timeoutMs: 30_000 })).toMatchObject({ state: 'COMPLETED', result: { value: 42 } })
  }, 60_000)

  test('the client gets the refusal as an ExecgateClientError with the code', async () => {
    const client = new ExecgateClient({ url: server.url, apiKey: GLOBEX })
    await expect(
      client.tasks.submit({
        intentId: 'client-loosened',
        request: { language: 'javascript', code: '1', policy: { network: ['example.com'] } },
      }),
    ).rejects.toMatchObject({
      name: 'ExecgateClientError',
      code: 'EXECGATE_SUBMIT_REFUSED',
      status: 400,
      fault: 'client',
      retryable: false,
      message: expect.stringContaining('network'),
    })
    expect((await client.tasks.list({ intentId: 'client-loosened' })).tasks).toEqual([])
  })

  test("another tenant's task cannot be suspended, resumed or cancelled: 404, as a missing one, and nothing changes", async () => {
    // Held by its memory limit (SUSPENDED by its own run, no race with a scheduler picking it up).
    const id = await exhaustedTask(ACME)
    const steal = await call(`/v1/tasks/${id}/suspend`, { key: GLOBEX, method: 'POST' })
    const missing = await call('/v1/tasks/no-such-task/suspend', { key: GLOBEX, method: 'POST' })
    expect({ status: steal.status, code: steal.json.error.code }).toEqual({ status: 404, code: 'EXECGATE_NOT_FOUND' })
    expect(steal.json.error.message).toContain(`no task "${id}" for tenant globex`)
    expect(missing.status).toBe(404)
    const resumeOthers = await call(`/v1/tasks/${id}/resume`, { key: GLOBEX, body: { policy: { outputBytes: 1024 } } })
    expect({ status: resumeOthers.status, code: resumeOthers.json.error.code }).toEqual({ status: 404, code: 'EXECGATE_NOT_FOUND' })
    expect((await call(`/v1/tasks/${id}`, { key: GLOBEX, method: 'DELETE' })).status).toBe(404)
    expect((await call(`/v1/tasks/${id}`, { key: ACME })).json).toMatchObject({ state: 'SUSPENDED', attempts: 1 })
    expect((await call(`/v1/tasks/${id}/resume`, { key: ACME, body: { policy: { outputBytes: 1024 } } })).json.state).toBe('PENDING')
    expect(await settled(id, ACME)).toMatchObject({ state: 'COMPLETED', result: { value: 7, stdout: `${PRINTED}\n` } })
  }, 60_000)
})

/** Every limit a plan step carries (`limits`: timeoutMs, memoryMb, outputBytes), each one above the profile. */
const stepLoosenings = [
  {
    label: 'step timeoutMs',
    limits: { timeoutMs: TIGHT.wallTimeMs + 1 },
    limit: `wallTimeMs ${TIGHT.wallTimeMs + 1} is above the allowed ${TIGHT.wallTimeMs}`,
  },
  {
    label: 'step memoryMb',
    limits: { memoryMb: TIGHT.memoryMb + 1 },
    limit: `memoryMb ${TIGHT.memoryMb + 1} is above the allowed ${TIGHT.memoryMb}`,
  },
  { label: 'step outputBytes', limits: { outputBytes: TIGHT.outputBytes + 1 }, limit: 'outputBytes' },
]
const planOf = (limits: object) => ({
  steps: [
    { id: 'fine', language: 'javascript', code: '1' },
    { id: 'loose', language: 'javascript', code: '2', dependsOn: ['fine'], limits },
  ],
})
const plansOf = async (key: string) => (await call('/v1/plans?limit=500', { key })).json.plans.length

describe('plans stay inside the tenant profile at submit', () => {
  test.each(stepLoosenings.map((item) => [item.label, item] as const))(
    'a plan whose %s loosens the profile: 400 EXECGATE_SUBMIT_REFUSED naming the step and the limit, nothing stored',
    async (_label, item) => {
      const before = await plansOf(ACME)
      const refused = await call('/v1/plans', { key: ACME, body: planOf(item.limits) })
      expect({ status: refused.status, code: refused.json.error?.code }).toEqual({ status: 400, code: 'EXECGATE_SUBMIT_REFUSED' })
      expect(refused.json.error.message).toContain('the plan was not submitted: step "loose": the request may only tighten the policy')
      expect(refused.json.error.message).toContain(item.limit)
      expect(await plansOf(ACME)).toBe(before)
    },
  )

  test(
    'through the library and the client the same refusal; a forbidden import stays ' + 'EXECGATE_REQUEST_INVALID; tightened it runs',
    async () => {
      const acme = { tenant: 'acme', profile: 'tight' }
      await expect(execgate.plans.run(planOf({ memoryMb: TIGHT.memoryMb + 1 }) as never, acme)).rejects.toMatchObject({
        code: 'EXECGATE_SUBMIT_REFUSED',
        message: expect.stringContaining('step "loose": the request may only tighten the policy: memoryMb 65 is above the allowed 64'),
      })
      const client = new ExecgateClient({ url: server.url, apiKey: GLOBEX })
      const globexPlans = await plansOf(GLOBEX)
      await expect(client.plans.run(planOf({ timeoutMs: TIGHT.wallTimeMs * 2 }) as never)).rejects.toMatchObject({
        name: 'ExecgateClientError',
        code: 'EXECGATE_SUBMIT_REFUSED',
        status: 400,
        fault: 'client',
        retryable: false,
        message: expect.stringContaining(`wallTimeMs ${TIGHT.wallTimeMs * 2} is above the allowed ${TIGHT.wallTimeMs}`),
      })
      expect(await plansOf(GLOBEX)).toBe(globexPlans)
      const forbidden = await call('/v1/plans', {
        key: ACME,
        body: { steps: [{ id: 'a', language: 'python', code: 'import os\nos.getcwd()' }] },
      })
      expect({ status: forbidden.status, code: forbidden.json.error.code }).toEqual({ status: 400, code: 'EXECGATE_REQUEST_INVALID' })
      const tightened = await client.plans.run(
        planOf({ timeoutMs: TIGHT.wallTimeMs, memoryMb: TIGHT.memoryMb, outputBytes: 1024 }) as never,
      )
      const done = await client.plans.wait(tightened.id)
      expect(done).toMatchObject({ state: 'COMPLETED', steps: [{ result: { value: 1 } }, { result: { value: 2 } }] })
    },
    60_000,
  )
})

describe('resuming with limits looser than the tenant profile is refused at the resume', () => {
  let id: string
  beforeAll(async () => {
    id = await exhaustedTask(ACME)
  }, 60_000)

  test.each(loosenings({ ...DEFAULT_POLICY, ...TIGHT }).map((item) => [item.label, item] as const))(
    '%s: 400 EXECGATE_RESUME_REFUSED naming the limit; the task stays SUSPENDED and does not run',
    async (_label, item) => {
      const refused = await call(`/v1/tasks/${id}/resume`, { key: ACME, body: item.request })
      expect({ status: refused.status, code: refused.json.error?.code }).toEqual({ status: 400, code: 'EXECGATE_RESUME_REFUSED' })
      expect(refused.json.error.message).toContain(`task ${id} was not resumed and stays SUSPENDED`)
      expect(refused.json.error.message).toContain(item.limit)
      expect(refused.json.error.message).toContain('may only tighten')
      const task = (await call(`/v1/tasks/${id}`, { key: ACME })).json
      expect({ state: task.state, attempts: task.attempts, policy: task.request.policy }).toEqual({
        state: 'SUSPENDED',
        attempts: 1,
        policy: { outputBytes: HELD_OUTPUT_BYTES },
      })
    },
  )

  test('a malformed change is refused the same way, naming the field', async () => {
    const refused = await call(`/v1/tasks/${id}/resume`, { key: ACME, body: { memoryMb: -1 } })
    expect({ status: refused.status, code: refused.json.error.code }).toEqual({ status: 400, code: 'EXECGATE_RESUME_REFUSED' })
    expect(refused.json.error.message).toContain('memoryMb')
  })

  test('the client gets the same refusal as an ExecgateClientError with the code', async () => {
    const client = new ExecgateClient({ url: server.url, apiKey: ACME })
    await expect(client.tasks.resume(id, { memoryMb: TIGHT.memoryMb + 1 })).rejects.toMatchObject({
      name: 'ExecgateClientError',
      code: 'EXECGATE_RESUME_REFUSED',
      status: 400,
      fault: 'client',
      retryable: false,
      message: expect.stringContaining('memoryMb 65 is above the allowed 64'),
    })
    expect((await client.tasks.get(id))?.state).toBe('SUSPENDED')
  })

  test('within the profile it is resumed and runs to completion', async () => {
    const resumed = await call(`/v1/tasks/${id}/resume`, {
      key: ACME,
      body: { memoryMb: TIGHT.memoryMb, timeoutMs: TIGHT.wallTimeMs, policy: { outputBytes: TIGHT.outputBytes } },
    })
    expect([resumed.status, resumed.json.state]).toEqual([200, 'PENDING'])
    expect(await settled(id, ACME)).toMatchObject({ state: 'COMPLETED', attempts: 2, result: { value: 7, stdout: `${PRINTED}\n` } })
  }, 60_000)
})

describe("a plan's resume changes the limits of the steps it held, within the tenant profile", () => {
  let url: string
  let held: { id: string; taskId: string }
  const heldTask = async () => (await call(`/v1/tasks/${held.taskId}`, { key: ACME })).json
  beforeAll(async () => {
    const created = await call('/v1/plans', {
      key: ACME,
      body: {
        steps: [
          { id: 'slow', language: 'javascript', code: 'const t = Date.now(); while (Date.now() - t < 1000) {}; 20' },
          { id: 'after', language: 'javascript', code: '22', dependsOn: ['slow'] },
        ],
      },
    })
    expect(created.status).toBe(201)
    url = `/v1/plans/${created.json.id}`
    // 'after' waits for 'slow' (a second of work): the plan is still RUNNING when the suspend lands.
    const suspended = await call(`${url}/suspend`, { key: ACME, method: 'POST' })
    expect([suspended.status, suspended.json.state]).toEqual([200, 'SUSPENDED'])
    held = suspended.json.steps.find((step: { id: string }) => step.id === 'after')
    expect(held).toMatchObject({ state: 'SUSPENDED' })
  }, 60_000)

  // The engine grants its steps a workspace (fabric.plans.stepWorkspaceAccess, sandboxed by default): their ceiling.
  const stepCeiling = { ...DEFAULT_POLICY, ...TIGHT, filesystem: 'sandboxed' as const }
  test('the steps run with the workspace grant the ceiling assumes', () => {
    expect(execgate.config.fabric.plans.stepWorkspaceAccess).toBe(stepCeiling.filesystem)
  })

  test.each(loosenings(stepCeiling).map((item) => [item.label, item] as const))(
    '%s: 400 EXECGATE_RESUME_REFUSED naming a held step and the limit; the plan stays SUSPENDED, its steps unchanged',
    async (_label, item) => {
      const refused = await call(`${url}/resume`, { key: ACME, body: item.request })
      expect({ status: refused.status, code: refused.json.error?.code }).toEqual({ status: 400, code: 'EXECGATE_RESUME_REFUSED' })
      expect(refused.json.error.message).toMatch(/^\[execgate\] plan \S+ was not resumed and stays SUSPENDED: step "(slow|after)": /)
      expect(refused.json.error.message).toContain(item.limit)
      expect(refused.json.error.message).toContain('may only tighten')
      expect((await call(url, { key: ACME })).json.state).toBe('SUSPENDED')
      const task = await heldTask()
      expect({ state: task.state, memoryMb: task.request.memoryMb, policy: task.request.policy }).toEqual({ state: 'SUSPENDED' })
    },
  )

  test('a malformed change, or a field a resume cannot change, is refused; another tenant gets 404 and nothing moves', async () => {
    const malformed = await call(`${url}/resume`, { key: ACME, body: { memoryMb: -1 } })
    expect({ status: malformed.status, code: malformed.json.error.code }).toEqual({ status: 400, code: 'EXECGATE_RESUME_REFUSED' })
    expect(malformed.json.error.message).toContain('memoryMb')
    const other = await call(`${url}/resume`, { key: ACME, body: { code: '1' } })
    expect({ status: other.status, code: other.json.error.code }).toEqual({ status: 400, code: 'EXECGATE_REQUEST_INVALID' })
    expect(other.json.error.message).toContain('code cannot be changed on resume')
    const stolen = await call(`${url}/resume`, { key: GLOBEX, body: { memoryMb: 32 } })
    expect({ status: stolen.status, code: stolen.json.error.code }).toEqual({ status: 404, code: 'EXECGATE_NOT_FOUND' })
    expect((await call(url, { key: GLOBEX })).status).toBe(404)
    expect((await call(url, { key: ACME })).json.state).toBe('SUSPENDED')
    const stepLoosened = await call(`/v1/tasks/${held.taskId}/resume`, { key: ACME, body: { memoryMb: TIGHT.memoryMb * 4 } })
    expect({ status: stepLoosened.status, code: stepLoosened.json.error.code }).toEqual({ status: 400, code: 'EXECGATE_RESUME_REFUSED' })
    expect(stepLoosened.json.error.message).toContain('memoryMb 256 is above the allowed 64')
    const client = new ExecgateClient({ url: server.url, apiKey: ACME })
    await expect(client.plans.resume(url.split('/').pop()!, { memoryMb: TIGHT.memoryMb + 1 })).rejects.toMatchObject({
      name: 'ExecgateClientError',
      code: 'EXECGATE_RESUME_REFUSED',
      status: 400,
      message: expect.stringContaining('memoryMb 65 is above the allowed 64'),
    })
    expect((await heldTask()).state).toBe('SUSPENDED')
  })

  test('within the profile the plan resumes, its held steps take the changes and it completes', async () => {
    const resumed = await call(`${url}/resume`, { key: ACME, body: { memoryMb: 32, policy: { outputBytes: 1024 } } })
    expect([resumed.status, resumed.json.state]).toEqual([200, 'RUNNING'])
    let plan
    for (;;) {
      plan = (await call(url, { key: ACME })).json
      if (plan.state !== 'RUNNING') break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(plan).toMatchObject({ state: 'COMPLETED', steps: [{ result: { value: 20 } }, { result: { value: 22 } }] })
    expect((await heldTask()).request).toMatchObject({ memoryMb: 32, policy: { outputBytes: 1024 } })
    const events = (await call(`${url}/events`, { key: ACME })).text
    expect(events).toContain('resumed by the caller with memoryMb, policy changed')
  }, 60_000)
})
