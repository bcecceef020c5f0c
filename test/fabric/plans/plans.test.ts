import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, isExecgateError, type Execgate, type PlanEvent, type PlanStepSpec } from '../../../src'
import { FakeConverse } from '../../fakes/converse-server'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'

/**
 * Plans end to end, one suite for both stores: the embedded one (a real SQLite file in a temp dir) and the distributed
 * one (a real redis-server on a loopback port, steps dispatched through BullMQ); real runs on quickjs, monty and the
 * shell, and the reflector configured by config keys (fabric.plans.reflector.*) as Bedrock Converse, spoken to by the
 * real SDK client over HTTP/1.1 to a local server with scripted replies. scripts/setup/redis.sh installs redis-server;
 * without it the Redis half fails naming that script (never skipped).
 */

process.env.AWS_ACCESS_KEY_ID = 'AKIDEXECGATETEST'
process.env.AWS_SECRET_ACCESS_KEY = 'execgate-test-secret'

const MODEL = 'anthropic.claude-3-5-haiku-20241022-v1:0'
/** The reflector's scripted replies, in order; each test pushes its own. */
const replies: ConstructorParameters<typeof FakeConverse>[0] = []
const converse = new FakeConverse(replies)
let converseUrl: Promise<string> | undefined
const reflectorUrl = () => (converseUrl ??= converse.listen())
afterAll(() => converse.close())

// Both stores always: without redis-server the Redis half fails with the command that installs it.
describe.each(['sqlite', 'redis'] as const)('%s store', (storeKind) => {
  const dataDirs: string[] = []
  let execgate: Execgate
  let redis: RedisServer | undefined

  function newDataDir(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-plans-'))
    dataDirs.push(dir)
    return dir
  }

  /** An execgate on `dataDir` (on Redis: its own key prefix, named after it); with the reflector at `endpoint` when given. */
  function open(dataDir: string, endpoint?: string): Promise<Execgate> {
    const store = redis ? { store: 'redis' as const, redisUrl: redis.url, redisPrefix: path.basename(dataDir), leaseMs: 3000 } : {}
    return createExecgate({
      overrides: {
        execution: { enabled: ['quickjs', 'monty', 'shell'] },
        // Four workers: two may run batch work at once beside the interactive reservation, so independent steps can.
        adapters: { quickjs: { workers: 4 } },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: { ...store, dataDir, plans: { maxRevisions: 4, ...(endpoint ? { reflector: { modelId: MODEL, endpoint } } : {}) } },
      },
    })
  }

  beforeAll(async () => {
    if (storeKind === 'redis') redis = await startRedisServer()
    execgate = await open(newDataDir(), await reflectorUrl())
    // The engines' cold start is not what these tests look at.
    await execgate.execute({ language: 'python', code: '1' })
  }, 60_000)

  afterAll(async () => {
    await execgate.dispose()
    await redis?.stop()
    redis = undefined
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true })
  })

  beforeEach(() => {
    replies.length = 0
    converse.requests.length = 0
  })

  const js = (id: string, code: string, dependsOn?: string[]): PlanStepSpec => ({
    id,
    language: 'javascript',
    code,
    ...(dependsOn ? { dependsOn } : {}),
  })
  const reply = (steps: PlanStepSpec[], note = 'fixed it') => JSON.stringify({ note, steps })
  const busy = (ms: number) => `const t0 = Date.now(); while (Date.now() - t0 < ${ms}) {}`

  async function eventsOf(target: Execgate, id: string): Promise<PlanEvent[]> {
    const events: PlanEvent[] = []
    for await (const event of target.plans.events(id)) if (event.type !== 'output') events.push(event)
    return events
  }

  const runsOf = (events: PlanEvent[], stepId: string) =>
    events.filter((event) => event.type === 'step' && event.stepId === stepId && event.to === 'RUNNING').length

  describe('a plan runs its steps as tasks', () => {
    test('outputs reach dependents at steps/<id>/value.json and steps/<id>/files/<path>, in python, javascript and bash', async () => {
      const plan = await execgate.plans.run({
        goal: 'add up the rows',
        steps: [
          { id: 'extract', language: 'python', code: 'write_file("extra.txt", "4")\n[1, 2, 3]', description: 'the rows' },
          js(
            'total',
            'const rows = JSON.parse(await read_file("steps/extract/value.json")); ({ sum: ' +
              'rows.reduce((a, b) => a + b, 0) + Number(await ' +
              'read_file("steps/extract/files/extra.txt")), seen: await list_files() })',
            ['extract'],
          ),
          { id: 'report', language: 'bash', code: 'echo "total: $(cat steps/total/value.json)"', dependsOn: ['total'] },
        ],
      })
      expect(plan).toMatchObject({ state: 'RUNNING', version: 1, tenant: 'local' })
      const done = await execgate.plans.wait(plan.id)
      expect(done.state).toBe('COMPLETED')
      const [extract, total, report] = done.steps
      expect(extract!.result?.value).toEqual([1, 2, 3])
      expect(total!.result?.value).toEqual({ sum: 10, seen: ['steps/extract/files/extra.txt', 'steps/extract/value.json'] })
      expect(report!.result?.stdout).toBe('total: {"sum":10,"seen":["steps/extract/files/extra.txt","steps/extract/value.json"]}\n')
      // Every task carries where it belongs: plan, version, step.
      const task = await execgate.tasks.get(total!.taskId)
      expect(task?.provenance).toEqual({ planId: plan.id, planVersion: 1, stepId: 'total' })
      expect(task?.dependencyPaths).toEqual({ [extract!.taskId]: 'steps/extract' })
    })

    test('independent steps run at the same time', async () => {
      const timed = (id: string) => js(id, `const start = Date.now(); ${busy(400)}; ({ start, end: Date.now() })`)
      const plan = await execgate.plans.run({ steps: [timed('left'), timed('right'), js('join', '1', ['left', 'right'])] })
      const done = await execgate.plans.wait(plan.id)
      expect(done.state).toBe('COMPLETED')
      const left = done.steps[0]!.result!.value as { start: number; end: number }
      const right = done.steps[1]!.result!.value as { start: number; end: number }
      // Each ran inside the other's run: they overlapped.
      expect(left.start).toBeLessThan(right.end)
      expect(right.start).toBeLessThan(left.end)
    })

    test('a plan is refused at submission for a cycle, an unknown dependency, a forbidden import or a loosened limit', async () => {
      const refused = async (spec: Parameters<Execgate['plans']['run']>[0]) => {
        const error = await execgate.plans.run(spec).catch((caught: unknown) => caught)
        expect(isExecgateError(error, 'EXECGATE_REQUEST_INVALID')).toBe(true)
        return (error as Error).message
      }
      expect(await refused({ steps: [js('a', '1', ['b']), js('b', '1', ['a'])] })).toContain('dependency cycle: a -> b -> a')
      expect(await refused({ steps: [js('a', '1', ['nope'])] })).toContain('unknown dependency: step "a" depends on "nope"')
      expect(await refused({ steps: [{ id: 'a', language: 'python', code: 'import os\nos.getcwd()' }] })).toMatch(/step "a": .*os/)
      // A loosened limit is refused as a task's is: EXECGATE_SUBMIT_REFUSED, naming the step and the limit.
      const loosened = await execgate.plans
        .run({ steps: [{ ...js('a', '1'), limits: { timeoutMs: 999_999 } }] })
        .catch((caught: unknown) => caught)
      expect(loosened).toMatchObject({
        code: 'EXECGATE_SUBMIT_REFUSED',
        message: expect.stringContaining(
          'the plan was not submitted: step "a": the request may only tighten the policy: wallTimeMs 999999 is above the allowed 5000',
        ),
      })
      expect(await refused({ steps: [js('a', '1')], maxRevisions: 9 })).toContain('maxRevisions 9 is above the allowed 4')
      expect(await refused({ steps: [{ ...js('a', '1'), extra: true } as PlanStepSpec] })).toContain('steps[0].extra is not a known field')
    })

    test("plans are the tenant's: another tenant gets nothing, lists only its own", async () => {
      const plan = await execgate.plans.run({ steps: [js('a', '1')] }, { tenant: 'acme' })
      expect(await execgate.plans.get(plan.id, { tenant: 'globex' })).toBeUndefined()
      await expect(execgate.plans.cancel(plan.id, { tenant: 'globex' })).rejects.toMatchObject({ code: 'EXECGATE_NOT_FOUND' })
      expect((await execgate.plans.wait(plan.id, { tenant: 'acme' })).state).toBe('COMPLETED')
      expect((await execgate.plans.list({}, { tenant: 'acme' })).plans.map((item) => item.id)).toEqual([plan.id])
      expect((await execgate.plans.list({}, { tenant: 'globex' })).plans).toEqual([])
    })

    test('cancel terminates the plan and its running step; a second cancel is a conflict', async () => {
      const plan = await execgate.plans.run({ steps: [js('slow', `${busy(3000)}; 1`), js('after', '2', ['slow'])] })
      for await (const event of execgate.plans.events(plan.id)) if (event.type === 'step' && event.to === 'RUNNING') break
      const cancelled = await execgate.plans.cancel(plan.id)
      expect(cancelled).toMatchObject({ state: 'TERMINATED', reason: 'cancelled by the caller' })
      expect(cancelled.steps.map((step) => step.state)).toEqual(['TERMINATED', 'TERMINATED'])
      expect(cancelled.steps[0]!.reason).toBe(`plan ${plan.id} cancelled by the caller`)
      await expect(execgate.plans.cancel(plan.id)).rejects.toMatchObject({ code: 'EXECGATE_PLAN_CONFLICT' })
      const events = await eventsOf(execgate, plan.id)
      expect(events.at(-1)).toMatchObject({ type: 'plan', to: 'TERMINATED' })
    })
  })

  describe('the fix-plan loop', () => {
    test('a failed second step is revised by the reflector and the plan completes; step one ran exactly once', async () => {
      const fixed = js('double', 'const n = JSON.parse(await read_file("steps/base/value.json")); n * 2', ['base'])
      replies.push(
        reply(
          [fixed, js('report', 'JSON.parse(await read_file("steps/double/value.json")) + 1', ['double'])],
          'double was calling a function that does not exist',
        ),
      )
      const plan = await execgate.plans.run({
        goal: 'twice ten, plus one',
        steps: [
          js('base', 'write_file("note.txt", "ten"); 10'),
          js('double', 'const n = JSON.parse(await read_file("steps/base/value.json")); twice(n)', ['base']),
          js('report', 'JSON.parse(await read_file("steps/double/value.json")) + 1', ['double']),
        ],
      })
      const done = await execgate.plans.wait(plan.id)
      expect(done).toMatchObject({ state: 'COMPLETED', version: 2 })
      expect(done.steps.map((step) => [step.id, step.state, step.result?.value])).toEqual([
        ['base', 'COMPLETED', 10],
        ['double', 'COMPLETED', 20],
        ['report', 'COMPLETED', 21],
      ])
      // Step one: the same task in both versions, one run.
      expect(done.versions[1]!.steps[0]).toMatchObject({ id: 'base', taskId: done.versions[0]!.steps[0]!.taskId, reusedFrom: 1 })
      expect((await execgate.tasks.get(done.steps[0]!.taskId))?.attempts).toBe(1)
      const events = await eventsOf(execgate, plan.id)
      expect(runsOf(events, 'base')).toBe(1)
      expect(done.versions[1]).toMatchObject({
        version: 2,
        note: 'double was calling a function that does not exist',
        changes: { added: [], removed: [], changed: ['double'], reused: ['base'] },
      })
      expect(done.versions[1]!.reason).toMatch(/^revision 1: step double failed: error: ReferenceError: .*twice/)
      expect(done.revisions).toEqual([expect.objectContaining({ attempt: 1, stepId: 'double', accepted: true, version: 2 })])
      expect((await execgate.tasks.get(done.steps[1]!.taskId))?.provenance).toEqual({ planId: plan.id, planVersion: 2, stepId: 'double' })
      // What the reflector was shown: the goal, the failed step's code and error, what completed.
      expect(converse.requests).toHaveLength(1)
      const prompt = converse.requests[0]!.messages[0]!.text
      expect(converse.requests[0]!.modelId).toBe(MODEL)
      expect(prompt).toContain('Goal of the plan: twice ten, plus one')
      expect(prompt).toContain('Failed step "double" (javascript)')
      expect(prompt).toContain('twice(n)')
      expect(prompt).toMatch(/Why it failed: error: ReferenceError: .*twice/)
      expect(prompt).toContain('- base: value 10')
      expect(converse.requests[0]!.system).toContain('steps/<id>/value.json')
    })

    test("the plan's events are in order: steps, the pause, the revision, the new version, the end", async () => {
      replies.push(reply([js('b', 'JSON.parse(await read_file("steps/a/value.json")) + 1', ['a'])]))
      const plan = await execgate.plans.run({ steps: [js('a', '1'), js('b', 'throw new Error("nope")', ['a']), js('c', '3')] })
      const events = await eventsOf(execgate, plan.id)
      expect(events.map((event) => event.seq)).toEqual([...events.map((event) => event.seq)].sort((x, y) => x - y))
      expect(events[0]).toMatchObject({ type: 'plan', from: null, to: 'RUNNING', reason: 'submitted' })
      expect(events.at(-1)).toMatchObject({ type: 'plan', from: 'RUNNING', to: 'COMPLETED' })
      const at = (match: (event: PlanEvent) => boolean) => events.findIndex(match)
      const failed = at((event) => event.type === 'step' && event.stepId === 'b' && event.to === 'FAILED')
      const paused = at((event) => event.type === 'plan' && event.to === 'REVISING')
      const revised = at((event) => event.type === 'revision' && event.accepted)
      const resumed = at((event) => event.type === 'plan' && event.from === 'REVISING' && event.to === 'RUNNING')
      const rerun = at((event) => event.type === 'step' && event.stepId === 'b' && event.version === 2 && event.to === 'PENDING')
      expect([failed, paused, revised, resumed, rerun].every((index) => index >= 0)).toBe(true)
      expect(failed < paused && paused < revised && revised < resumed && resumed < rerun).toBe(true)
      // Each task's transitions follow each other: every event starts where the one before it ended.
      for (const taskId of new Set(events.flatMap((event) => (event.type === 'step' ? [event.taskId] : [])))) {
        const steps = events.filter(
          (event): event is Extract<PlanEvent, { type: 'step' }> => event.type === 'step' && event.taskId === taskId,
        )
        steps.forEach((event, index) => expect(event.from).toBe(index === 0 ? null : steps[index - 1]!.to))
      }
    })

    test(
      'revisions with a cycle, a forbidden import, an unknown dependency are refused and ' + 'counted; the reflector is told why',
      async () => {
        replies.push(
          reply([js('b', '1', ['c']), js('c', '2', ['b'])]),
          reply([{ id: 'b', language: 'python', code: 'import os\nos.getcwd()', dependsOn: ['a'] }]),
          reply([js('b', '1', ['ghost'])]),
          reply([js('b', 'JSON.parse(await read_file("steps/a/value.json")) + 1', ['a'])]),
        )
        const plan = await execgate.plans.run({ steps: [js('a', '41'), js('b', 'throw new Error("bad input")', ['a'])] })
        const done = await execgate.plans.wait(plan.id)
        expect(done).toMatchObject({ state: 'COMPLETED', version: 2 })
        expect(done.steps[1]!.result?.value).toBe(42)
        expect(done.revisions.map((revision) => revision.accepted)).toEqual([false, false, false, true])
        expect(done.revisions[0]!.reason).toBe('dependency cycle: b -> c -> b')
        expect(done.revisions[1]!.reason).toMatch(/^step "b": .*os/)
        expect(done.revisions[2]!.reason).toContain('unknown dependency: step "b" depends on "ghost"')
        expect(converse.requests).toHaveLength(4)
        expect(converse.requests[1]!.messages[0]!.text).toContain('1. dependency cycle: b -> c -> b')
        expect(converse.requests[3]!.messages[0]!.text).toContain('3. unknown dependency')
        const revisionEvents = (await eventsOf(execgate, plan.id)).filter((event) => event.type === 'revision')
        expect(revisionEvents.map((event) => event.type === 'revision' && [event.attempt, event.accepted])).toEqual([
          [1, false],
          [2, false],
          [3, false],
          [4, true],
        ])
      },
    )

    test('out of revisions: the plan ends FAILED naming the step and its last error', async () => {
      replies.push('I am not sure how to fix this.', reply([js('b', 'throw new Error("boom again")', ['a'])]))
      const plan = await execgate.plans.run({ steps: [js('a', '1'), js('b', 'throw new Error("boom")', ['a'])], maxRevisions: 2 })
      const done = await execgate.plans.wait(plan.id)
      expect(done).toMatchObject({ state: 'FAILED', failedStep: 'b', version: 2 })
      expect(done.reason).toMatch(/^step b failed: error: Error: boom again.*; no revision left \(2 of 2 used\)$/)
      expect(done.revisions.map((revision) => [revision.accepted, revision.reason])).toEqual([
        [false, 'unparseable reply: no JSON object in it'],
        [true, 'fixed it'],
      ])
      expect(converse.requests).toHaveLength(2)
    })

    test('a reflector that cannot be reached counts as a refused revision', async () => {
      // No reply scripted: the local server answers ThrottlingException.
      const plan = await execgate.plans.run({ steps: [js('a', 'throw new Error("x")')], maxRevisions: 1 })
      const done = await execgate.plans.wait(plan.id)
      expect(done.state).toBe('FAILED')
      expect(done.revisions[0]!.reason).toMatch(/^the reflector did not answer: /)
      expect(done.reason).toMatch(/no revision left \(1 of 1 used; the last reply was refused: the reflector did not answer/)
    })
  })

  describe('without a reflector, and across a restart', () => {
    let dataDir: string
    beforeAll(() => {
      dataDir = newDataDir()
    })

    test('a failed step fails the plan at once, naming the step and the error', async () => {
      const plain = await open(dataDir)
      try {
        const plan = await plain.plans.run({ steps: [js('a', '1'), js('b', 'throw new Error("no luck")', ['a']), js('c', '1', ['b'])] })
        const done = await plain.plans.wait(plan.id)
        expect(done).toMatchObject({ state: 'FAILED', failedStep: 'b', revisions: [] })
        expect(done.reason).toMatch(
          /^step b failed: error: Error: no luck .*; no reflector is configured \(fabric.plans.reflector.modelId\)/,
        )
        expect(done.steps.map((step) => step.state)).toEqual(['COMPLETED', 'FAILED', 'TERMINATED'])
      } finally {
        await plain.dispose()
      }
    })

    test('a restart mid-plan continues it: the interrupted step runs again, its dependent after it', async () => {
      const first = await open(dataDir)
      const plan = await first.plans.run({
        steps: [js('slow', `${busy(1500)}; 20`), js('next', 'JSON.parse(await read_file("steps/slow/value.json")) + 1', ['slow'])],
      })
      for await (const event of first.plans.events(plan.id)) if (event.type === 'step' && event.to === 'RUNNING') break
      await first.dispose()
      const second = await open(dataDir)
      try {
        const done = await second.plans.wait(plan.id)
        expect(done.state).toBe('COMPLETED')
        expect(done.steps.map((step) => step.result?.value)).toEqual([20, 21])
        const events = await eventsOf(second, plan.id)
        expect(
          events.some(
            (event) =>
              event.type === 'step' &&
              event.stepId === 'slow' &&
              event.from === 'RUNNING' &&
              event.to === 'PENDING' &&
              /shutdown/.test(event.reason),
          ),
        ).toBe(true)
        expect(runsOf(events, 'slow')).toBe(2)
        expect(runsOf(events, 'next')).toBe(1)
      } finally {
        await second.dispose()
      }
    })

    test(
      'a restart while the reflector is being asked asks it again and completes; the question ' + 'left unanswered is not counted',
      async () => {
        const revisingDir = newDataDir()
        const endpoint = await reflectorUrl()
        let asked!: () => void
        const question = new Promise<void>((resolve) => (asked = resolve))
        // The first question is never answered: the process stops while it waits.
        replies.push(
          () => (asked(), new Promise<string>(() => undefined)),
          reply([js('b', 'JSON.parse(await read_file("steps/a/value.json")) * 2', ['a'])]),
        )
        const first = await open(revisingDir, endpoint)
        const plan = await first.plans.run({ steps: [js('a', '21'), js('b', 'throw new Error("first try")', ['a'])] })
        await question
        expect((await first.plans.get(plan.id))?.state).toBe('REVISING')
        await first.dispose()
        const second = await open(revisingDir, endpoint)
        try {
          const done = await second.plans.wait(plan.id)
          expect(done).toMatchObject({
            state: 'COMPLETED',
            version: 2,
            steps: [
              { id: 'a', reusedFrom: 1 },
              { id: 'b', result: { value: 42 } },
            ],
          })
          expect(done.revisions).toEqual([expect.objectContaining({ attempt: 1, accepted: true })])
          expect(converse.requests).toHaveLength(2)
          expect(runsOf(await eventsOf(second, plan.id), 'a')).toBe(1)
        } finally {
          await second.dispose()
        }
      },
    )
  })
})
