import { DEFAULT_POLICY } from '../../src/policy'
import { ACME, GLOBEX } from '../servers/http-caller'
import { loosenings } from '../policy/loosenings'
import { ExecgateClient } from '../../src/client'
import { HELD_OUTPUT_BYTES, PRINTED, TIGHT, tightProfileServer } from './tight-profile-server'

/**
 * A tenant's profile over HTTP is a ceiling for resumes too: a task's resume with looser limits is refused at the
 * resume (over HTTP and through the client), and a plan's resume changes its held steps' limits only within it;
 * another tenant's plans cannot be resumed (404, as missing). Submits: policy-http.test.ts. Real server on loopback,
 * real quickjs, real SQLite task store.
 */

const served = tightProfileServer('resume-policy-http')
const { call, exhaustedTask, settled } = served

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
    const client = new ExecgateClient({ url: served.url, apiKey: ACME })
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
    expect(served.execgate.config.fabric.plans.stepWorkspaceAccess).toBe(stepCeiling.filesystem)
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
    const client = new ExecgateClient({ url: served.url, apiKey: ACME })
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
