import { DEFAULT_POLICY, profilesFromConfig } from '../../src/policy'
import { ACME, GLOBEX } from '../servers/http-caller'
import { loosenings } from '../policy/loosenings'
import { ExecgateClient } from '../../src/client'
import { PRINTED, TIGHT, tightProfileServer } from './tight-profile-server'

/**
 * A tenant's profile over HTTP is a ceiling: a request body that asks for more of any limit is refused naming the
 * limit, before anything runs; a task or a plan is submitted only within it (a looser task or plan step is refused at
 * the submit, over HTTP, through the library and the client); another tenant's tasks cannot be suspended or resumed
 * (404, as missing). Resumes: resume-policy-http.test.ts. Real server on loopback, real quickjs, real SQLite task store.
 */

const served = tightProfileServer('policy-http')
const { call, exhaustedTask, settled } = served
const tight = () => profilesFromConfig(served.execgate.config).tight!

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
    await expect(served.execgate.tasks.submitMany([spec(32), spec(TIGHT.memoryMb + 1)], acme)).rejects.toMatchObject({
      code: 'EXECGATE_SUBMIT_REFUSED',
      message: expect.stringContaining(
        'tasks[1] was not submitted: the request may only tighten the policy: memoryMb 65 is above the allowed 64',
      ),
    })
    await expect(served.execgate.tasks.submit(spec(TIGHT.memoryMb + 1), acme)).rejects.toMatchObject({ code: 'EXECGATE_SUBMIT_REFUSED' })
    expect((await served.execgate.tasks.list({ intentId: 'library-batch' }, acme)).tasks).toEqual([])
    const [task] = await served.execgate.tasks.submitMany([spec(TIGHT.memoryMb)], acme)
    expect(await served.execgate.tasks.wait(task!.id, { ...acme, timeoutMs: 30_000 })).toMatchObject({
      state: 'COMPLETED',
      result: { value: 42 },
    })
  }, 60_000)

  test('the client gets the refusal as an ExecgateClientError with the code', async () => {
    const client = new ExecgateClient({ url: served.url, apiKey: GLOBEX })
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
      await expect(served.execgate.plans.run(planOf({ memoryMb: TIGHT.memoryMb + 1 }) as never, acme)).rejects.toMatchObject({
        code: 'EXECGATE_SUBMIT_REFUSED',
        message: expect.stringContaining('step "loose": the request may only tighten the policy: memoryMb 65 is above the allowed 64'),
      })
      const client = new ExecgateClient({ url: served.url, apiKey: GLOBEX })
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
