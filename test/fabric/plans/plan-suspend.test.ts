import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate, type PlanEvent, type PlanStepSpec, type PlanView } from '../../../src'
import { failureOf } from '../../../src/fabric/plans/plan-steps'
import type { Task } from '../../../src/fabric/tasks'
import { FakeConverse } from '../../fakes/converse-server'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'

/**
 * Suspending and resuming a plan, on both stores (a real SQLite file in temp dirs; a real redis-server on a loopback
 * port, steps through BullMQ), real quickjs runs, and a reflector configured (a
 * local Converse server through the real SDK client) so that a suspended step mistaken for a failure would show as a
 * question to it.
 */

process.env.AWS_ACCESS_KEY_ID = 'AKIDEXECGATETEST'
process.env.AWS_SECRET_ACCESS_KEY = 'execgate-test-secret'

const converse = new FakeConverse([])
let endpoint: string | undefined
afterAll(() => converse.close())

// Both stores always: without redis-server the Redis half fails with the command that installs it (never skipped).
describe.each(['sqlite', 'redis'] as const)('%s store', (storeKind) => {
  const dataDirs: string[] = []
  let execgate: Execgate
  let redis: RedisServer | undefined

  function newDataDir(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-plan-suspend-'))
    dataDirs.push(dir)
    return dir
  }

  /** An execgate on `dataDir` (on Redis: its own key prefix, named after it). */
  function open(dataDir: string): Promise<Execgate> {
    const store = redis ? { store: 'redis' as const, redisUrl: redis.url, redisPrefix: path.basename(dataDir), leaseMs: 3000 } : {}
    return createExecgate({
      overrides: {
        execution: { enabled: ['quickjs'] },
        adapters: { quickjs: { workers: 4 } },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: { ...store, dataDir, plans: { reflector: { modelId: 'scripted-reflector', endpoint } } },
      },
    })
  }

  beforeAll(async () => {
    if (storeKind === 'redis') redis = await startRedisServer()
    endpoint ??= await converse.listen()
    execgate = await open(newDataDir())
    await execgate.execute({ language: 'javascript', code: '1' })
  }, 60_000)

  afterAll(async () => {
    await execgate.dispose()
    await redis?.stop()
    redis = undefined
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true })
  })

  const js = (id: string, code: string, dependsOn?: string[]): PlanStepSpec => ({
    id,
    language: 'javascript',
    code,
    ...(dependsOn ? { dependsOn } : {}),
  })
  const busy = (ms: number) => `const t0 = Date.now(); while (Date.now() - t0 < ${ms}) {}`
  /** first (quick) → slow (busy for a while) → last: slow is the step running when the plan is suspended. */
  const chain = () => ({
    steps: [
      js('first', '20'),
      js('slow', `${busy(1500)}; JSON.parse(await read_file("steps/first/value.json")) + 1`, ['first']),
      js('last', 'JSON.parse(await read_file("steps/slow/value.json")) * 2', ['slow']),
    ],
  })

  async function untilStepRunning(target: Execgate, planId: string, stepId: string): Promise<void> {
    for (;;) {
      const plan = await target.plans.get(planId)
      if (plan?.steps.find((step) => step.id === stepId)?.state === 'RUNNING') return
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }

  async function eventsOf(target: Execgate, id: string): Promise<PlanEvent[]> {
    const events: PlanEvent[] = []
    for await (const event of target.plans.events(id)) if (event.type !== 'output') events.push(event)
    return events
  }

  const planMoves = (events: PlanEvent[]) => events.flatMap((event) => (event.type === 'plan' ? [`${event.from}>${event.to}`] : []))
  const runsOf = (events: PlanEvent[], stepId: string) =>
    events.filter((event) => event.type === 'step' && event.stepId === stepId && event.to === 'RUNNING').length
  const states = (plan: PlanView) => plan.steps.map((step) => step.state)

  describe('plans.suspend and plans.resume', () => {
    test(
      'suspend holds the running step and the ones after it (not a failure: no revision); ' +
        'resume completes it, nothing completed runs again',
      async () => {
        const plan = await execgate.plans.run(chain())
        await untilStepRunning(execgate, plan.id, 'slow')
        const suspended = await execgate.plans.suspend(plan.id)
        expect(suspended).toMatchObject({ state: 'SUSPENDED', reason: 'suspended by the caller', version: 1 })
        expect(states(suspended)).toEqual(['COMPLETED', 'SUSPENDED', 'SUSPENDED'])
        expect(suspended.steps[1]!.reason).toBe(`plan ${plan.id} suspended`)
        // wait settles on a suspended plan, like tasks.wait on a suspended task.
        expect((await execgate.plans.wait(plan.id, { timeoutMs: 5000 })).state).toBe('SUSPENDED')
        // Past the slow step's run and more than a tick of the engine: still held, nothing asked of the reflector.
        await new Promise((resolve) => setTimeout(resolve, 2000))
        const held = (await execgate.plans.get(plan.id))!
        expect([held.state, ...states(held)]).toEqual(['SUSPENDED', 'COMPLETED', 'SUSPENDED', 'SUSPENDED'])
        expect(converse.requests).toHaveLength(0)

        const resumed = await execgate.plans.resume(plan.id)
        expect(resumed).toMatchObject({ state: 'RUNNING', reason: 'resumed by the caller' })
        const done = await execgate.plans.wait(plan.id)
        expect(done).toMatchObject({ state: 'COMPLETED', version: 1, revisions: [] })
        expect(done.steps.map((step) => step.result?.value)).toEqual([20, 21, 42])
        expect(converse.requests).toHaveLength(0)
        const events = await eventsOf(execgate, plan.id)
        expect(planMoves(events)).toEqual(['null>RUNNING', 'RUNNING>SUSPENDED', 'SUSPENDED>RUNNING', 'RUNNING>COMPLETED'])
        // The running step was stopped once and ran again after the resume, to completion, and not after that.
        expect([runsOf(events, 'first'), runsOf(events, 'slow'), runsOf(events, 'last')]).toEqual([1, 2, 1])
        const slowMoves = events.flatMap((event) => (event.type === 'step' && event.stepId === 'slow' ? [event.to] : []))
        expect(slowMoves.filter((to) => to === 'COMPLETED')).toHaveLength(1)
        expect(slowMoves.at(-1)).toBe('COMPLETED')
        expect(slowMoves).toContain('SUSPENDED')
      },
      30_000,
    )

    test(
      'suspend of a plan not RUNNING and resume of one not SUSPENDED are conflicts; cancel of a ' + 'suspended plan terminates it',
      async () => {
        const plan = await execgate.plans.run(chain())
        await expect(execgate.plans.resume(plan.id)).rejects.toMatchObject({
          code: 'EXECGATE_PLAN_CONFLICT',
          message: `[execgate] plan ${plan.id} is RUNNING and cannot be resumed (only SUSPENDED plans can)`,
        })
        await execgate.plans.suspend(plan.id)
        await expect(execgate.plans.suspend(plan.id)).rejects.toMatchObject({
          code: 'EXECGATE_PLAN_CONFLICT',
          message: `[execgate] plan ${plan.id} is SUSPENDED and cannot be suspended (only RUNNING plans can)`,
        })
        const cancelled = await execgate.plans.cancel(plan.id)
        expect(cancelled.state).toBe('TERMINATED')
        expect(cancelled.steps.every((step) => step.state === 'COMPLETED' || step.state === 'TERMINATED')).toBe(true)
        await expect(execgate.plans.resume(plan.id)).rejects.toMatchObject({
          code: 'EXECGATE_PLAN_CONFLICT',
          message: `[execgate] plan ${plan.id} is TERMINATED and cannot be resumed (only SUSPENDED plans can)`,
        })
        await expect(execgate.plans.suspend(plan.id)).rejects.toMatchObject({
          message: `[execgate] plan ${plan.id} is TERMINATED and cannot be suspended (only RUNNING plans can)`,
        })
        await expect(execgate.plans.cancel(plan.id)).rejects.toMatchObject({
          message: `[execgate] plan ${plan.id} is TERMINATED and cannot be cancelled`,
        })
        const events = await eventsOf(execgate, plan.id)
        expect(planMoves(events)).toEqual(['null>RUNNING', 'RUNNING>SUSPENDED', 'SUSPENDED>TERMINATED'])
      },
      30_000,
    )

    test("another tenant's plan is not found, exactly like a missing one", async () => {
      const plan = await execgate.plans.run(chain(), { tenant: 'acme' })
      try {
        const globex = { tenant: 'globex' }
        const actions = [(id: string) => execgate.plans.suspend(id, globex), (id: string) => execgate.plans.resume(id, {}, globex)]
        for (const action of actions) {
          await expect(action(plan.id)).rejects.toMatchObject({
            code: 'EXECGATE_NOT_FOUND',
            message: `[execgate] no plan "${plan.id}" for tenant globex`,
          })
          await expect(action('no-such-plan')).rejects.toMatchObject({
            code: 'EXECGATE_NOT_FOUND',
            message: '[execgate] no plan "no-such-plan" for tenant globex',
          })
        }
        // A caller passed where the changes go fails loudly; it never acts as the default tenant.
        await expect(execgate.plans.resume(plan.id, globex as never)).rejects.toMatchObject({
          code: 'EXECGATE_REQUEST_INVALID',
          message: expect.stringContaining('tenant cannot be changed on resume'),
        })
        expect((await execgate.plans.get(plan.id, { tenant: 'acme' }))?.state).not.toBe('SUSPENDED')
      } finally {
        await execgate.plans.cancel(plan.id, { tenant: 'acme' })
      }
    }, 30_000)

    test('a suspended plan stays suspended across a restart, and resumes after it', async () => {
      const dataDir = newDataDir()
      const first = await open(dataDir)
      let planId: string
      try {
        const plan = await first.plans.run(chain())
        planId = plan.id
        await untilStepRunning(first, plan.id, 'slow')
        await first.plans.suspend(plan.id)
      } finally {
        await first.dispose()
      }
      const second = await open(dataDir)
      try {
        await second.plans.start()
        // Longer than the slow step and a tick of the restarted engine: nothing picked it up.
        await new Promise((resolve) => setTimeout(resolve, 2000))
        const after = (await second.plans.get(planId))!
        expect([after.state, ...states(after)]).toEqual(['SUSPENDED', 'COMPLETED', 'SUSPENDED', 'SUSPENDED'])
        await second.plans.resume(planId)
        const done = await second.plans.wait(planId)
        expect(done).toMatchObject({ state: 'COMPLETED', revisions: [] })
        expect(done.steps.map((step) => step.result?.value)).toEqual([20, 21, 42])
        const events = await eventsOf(second, planId)
        expect(planMoves(events)).toEqual(['null>RUNNING', 'RUNNING>SUSPENDED', 'SUSPENDED>RUNNING', 'RUNNING>COMPLETED'])
        expect([runsOf(events, 'first'), runsOf(events, 'slow'), runsOf(events, 'last')]).toEqual([1, 2, 1])
        expect(converse.requests).toHaveLength(0)
      } finally {
        await second.dispose()
      }
    }, 60_000)

    test('a step its RUNNING plan still holds (a resume cut short) is resumed at the next look, not revised', async () => {
      const plan = await execgate.plans.run(chain())
      await untilStepRunning(execgate, plan.id, 'slow')
      // As if the process had died between the plan's resume and its steps': the plan RUNNING, a step held by it.
      await execgate.tasks.scheduler.suspend(plan.steps[1]!.taskId, `plan ${plan.id} suspended`)
      const done = await execgate.plans.wait(plan.id, { timeoutMs: 15_000 })
      expect(done).toMatchObject({ state: 'COMPLETED', revisions: [] })
      expect(done.steps.map((step) => step.result?.value)).toEqual([20, 21, 42])
      expect(converse.requests).toHaveLength(0)
    }, 30_000)
  })
})

test("failureOf: a step held by its plan is not a failure; one suspended by its own run's limits is", () => {
  const task = (reason: string) => ({ state: 'SUSPENDED', reason }) as Task
  expect(failureOf(task('plan 1234 suspended'))).toBeUndefined()
  expect(failureOf(task('resource_exhaustion (memory_limit): over 64 MB'))).toBe('resource_exhaustion (memory_limit): over 64 MB')
})
