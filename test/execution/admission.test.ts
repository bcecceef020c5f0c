import { createExecgate, type Execgate, type ExecutionRequest, type ExecutionResult } from '../../src'
import type { HostFunctionDefinition } from '../../src/workspace'

/**
 * Admission through the library with real QuickJS workers: two worker threads = two slots, one of them reserved
 * for interactive runs (interactiveShare 0.5). Busy loops stand in for batch work; each run answers the
 * `Date.now()` at which its code started, so the order of starts is measured, not assumed.
 */

const busy = (ms: number) => `const started = Date.now(); while (Date.now() - started < ${ms}) {}; started`

async function createQuickJsExecgate(admission: Record<string, unknown> = {}): Promise<Execgate> {
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      adapters: { quickjs: { workers: 2 } },
      admission: { interactiveShare: 0.5, inProcessBatchRuns: 4, ...admission },
    } as never,
  })
  // Warm both workers, so the measured runs time the code, not a cold start.
  await Promise.all([
    execgate.execute({ language: 'javascript', code: '1', lane: 'interactive' }),
    execgate.execute({ language: 'javascript', code: '1' }),
  ])
  return execgate
}

function quickjsAdmission(execgate: Execgate) {
  return execgate.status().admission.adapters.find((item) => item.adapter === 'quickjs')!
}

/** Resolves once `check` holds (polled every 5 ms), so a test waits for a state instead of sleeping a guess. */
async function until(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time')
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

describe('admission with real QuickJS workers', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createQuickJsExecgate()
  }, 60_000)
  afterAll(() => execgate.dispose())

  test('the adapter declares its slots and one is reserved for interactive runs', () => {
    expect(quickjsAdmission(execgate)).toMatchObject({
      slots: 2,
      reserved: 1,
      inUse: { interactive: 0, batch: 0 },
      queued: { interactive: 0, batch: 0 },
    })
  })

  test('the reserved share is never used by batch work, and an interactive run starts at once beside it', async () => {
    const batchInUse: number[] = []
    const sampler = setInterval(() => batchInUse.push(quickjsAdmission(execgate).inUse.batch), 5)
    const batch = [0, 1, 2].map(() => execgate.execute({ language: 'javascript', code: busy(250), lane: 'batch' }))
    await until(() => quickjsAdmission(execgate).queued.batch === 2)
    const interactive = await execgate.execute({ language: 'javascript', code: '6 * 7', lane: 'interactive' })
    const results = await Promise.all(batch)
    clearInterval(sampler)
    expect(interactive).toMatchObject({ status: 'ok', value: 42, admission: { lane: 'interactive' } })
    expect(Math.max(...batchInUse)).toBe(1)
    // One batch slot: each batch run started only after the one before it had finished.
    const starts = results.map((result) => result.value as number).sort((a, b) => a - b)
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(240)
    expect(starts[2]! - starts[1]!).toBeGreaterThanOrEqual(240)
    expect(results.every((result) => result.status === 'ok')).toBe(true)
    expect(results.filter((result) => result.admission!.queuedMs > 200)).toHaveLength(2)
    // An order, not a clock: the interactive run, sent after both batch runs queued, waited less than either.
    const queuedBatch = results
      .map((result) => result.admission!.queuedMs)
      .sort((a, b) => a - b)
      .slice(1)
    expect(queuedBatch.every((queuedMs) => interactive.admission!.queuedMs < queuedMs)).toBe(true)
  }, 30_000)

  test('interactive work overtakes batch work queued before it', async () => {
    const firstBatch = execgate.execute({ language: 'javascript', code: busy(300), lane: 'batch' })
    await until(() => quickjsAdmission(execgate).inUse.batch === 1)
    const queuedBatch = execgate.execute({ language: 'javascript', code: busy(10), lane: 'batch' })
    await until(() => quickjsAdmission(execgate).queued.batch === 1)
    // The first interactive run takes the reserved slot; the second waits, behind the batch run in arrival order.
    // It holds the reserved slot well past the first batch run, so the batch slot is the one that frees first (when
    // both freed together, both waiters started at once and their 10 ms runs could end in the same millisecond).
    const holdingReserved = execgate.execute({ language: 'javascript', code: busy(1500), lane: 'interactive' })
    await until(() => quickjsAdmission(execgate).inUse.interactive === 1)
    const overtaking = execgate.execute({ language: 'javascript', code: busy(10), lane: 'interactive' })
    const [batchLate, interactiveLate] = await Promise.all([queuedBatch, overtaking, firstBatch, holdingReserved])
    expect(batchLate.status).toBe('ok')
    expect(interactiveLate.status).toBe('ok')
    expect(interactiveLate.value as number).toBeLessThan(batchLate.value as number)
  }, 30_000)

  test('priority orders runs within a lane', async () => {
    const holding = execgate.execute({ language: 'javascript', code: busy(200), lane: 'batch' })
    await until(() => quickjsAdmission(execgate).inUse.batch === 1)
    const low = execgate.execute({ language: 'javascript', code: busy(5), lane: 'batch', priority: 0 })
    await until(() => quickjsAdmission(execgate).queued.batch === 1)
    const high = execgate.execute({ language: 'javascript', code: busy(5), lane: 'batch', priority: 5 })
    const [lowResult, highResult] = await Promise.all([low, high, holding])
    expect(highResult!.value as number).toBeLessThan(lowResult!.value as number)
    expect(highResult!.admission).toMatchObject({ lane: 'batch', priority: 5 })
  }, 30_000)

  test('a queued run whose deadline passes ends timeout, says it never started, and never runs', async () => {
    let marked = 0
    const mark: HostFunctionDefinition = {
      name: 'mark',
      description: 'records that the code ran',
      parameters: { type: 'array' },
      handler: () => void (marked += 1),
    }
    // Held 3 s, twenty times the queued runs' bounds: they must be answered while it still runs (an order, not a clock).
    let holdingEnded = false
    const holding = execgate.execute({ language: 'javascript', code: busy(3000), lane: 'batch' }).finally(() => (holdingEnded = true))
    await until(() => quickjsAdmission(execgate).inUse.batch === 1)
    const [byTimeout, byQueueBound] = await Promise.all([
      execgate.execute({ language: 'javascript', code: 'await mark(); 1', lane: 'batch', timeoutMs: 150 }, { functions: [mark] }),
      execgate.execute({ language: 'javascript', code: 'await mark(); 1', lane: 'batch', maxQueueMs: 100 }, { functions: [mark] }),
    ])
    expect(holdingEnded).toBe(false)
    for (const result of [byTimeout, byQueueBound]) {
      expect(result).toMatchObject({ status: 'timeout', adapter: 'execgate', error: { code: 'EXECGATE_QUEUE_TIMEOUT' } })
      expect(result.message).toMatch(/never started: it waited \d+ ms in the batch queue for quickjs/)
    }
    expect(byQueueBound.message).toContain('past its 100 ms bound')
    await holding
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(marked).toBe(0)
    expect(quickjsAdmission(execgate).queued.batch).toBe(0)
  }, 30_000)

  test('agent-type profiles refuse with the quota name: caps on the policy, and concurrent runs', async () => {
    const withinDefaults = await execgate.execute({ language: 'javascript', code: '1', agentType: 'planning' })
    expect(withinDefaults.status).toBe('ok')
    const unknown = await execgate.execute({ language: 'javascript', code: '1', agentType: 'tiny' })
    expect(unknown).toMatchObject({ status: 'invalid_request', error: { code: 'EXECGATE_AGENT_TYPE_UNKNOWN' } })
    const first = execgate.execute({ language: 'javascript', code: busy(200), agentType: 'planning', lane: 'interactive' })
    await until(() => quickjsAdmission(execgate).inUse.interactive === 1)
    const second = await execgate.execute({ language: 'javascript', code: '1', agentType: 'planning', lane: 'interactive' })
    expect(second).toMatchObject({ status: 'unavailable', error: { code: 'EXECGATE_QUOTA_EXCEEDED' } })
    expect(second.message).toContain('admission.agentTypes.planning.maxConcurrent')
    expect(second.retryAfterMs).toBeGreaterThan(0)
    expect((await first).status).toBe('ok')
  }, 30_000)
})

describe('agent-type caps and tenant quotas', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createQuickJsExecgate({
      agentTypes: { quick: { maxWallTimeMs: 1000, maxMemoryMb: 64 } },
      tenants: { acme: { maxConcurrent: 1, maxQueued: 1 }, globex: { cpuMsPerMinute: 150 }, pinned: { lane: 'batch' } },
    })
  }, 60_000)
  afterAll(() => execgate.dispose())

  test('a policy over the agent type cap is refused naming the cap; within it the run goes', async () => {
    const over = await execgate.execute({ language: 'javascript', code: '1', agentType: 'quick' })
    expect(over).toMatchObject({ status: 'policy_violation', error: { code: 'EXECGATE_QUOTA_LIMIT' } })
    expect(over.message).toContain('admission.agentTypes.quick.maxWallTimeMs')
    const within = await execgate.execute({ language: 'javascript', code: '2', agentType: 'quick', timeoutMs: 1000, memoryMb: 64 })
    expect(within).toMatchObject({ status: 'ok', value: 2 })
  })

  test("a tenant's concurrent runs wait, its queued runs past the quota are refused naming it", async () => {
    const run = (code: string): Promise<ExecutionResult> =>
      execgate.execute({ language: 'javascript', code, lane: 'interactive' }, { tenant: 'acme' })
    const first = run(busy(200))
    const second = run(busy(5))
    const third = await run('3')
    expect(third).toMatchObject({ status: 'unavailable', error: { code: 'EXECGATE_QUOTA_EXCEEDED' } })
    expect(third.message).toContain('admission.tenants.acme.maxQueued')
    const [firstResult, secondResult] = await Promise.all([first, second])
    expect(firstResult!.status).toBe('ok')
    // The second waited for the tenant's one concurrent run, though a slot was free.
    expect(secondResult!.admission!.queuedMs).toBeGreaterThan(150)
  }, 30_000)

  test("a tenant's interactive runs waiting on its own quota do not hold back others' batch runs", async () => {
    const first = execgate.execute({ language: 'javascript', code: busy(1500), lane: 'interactive' }, { tenant: 'acme' })
    await until(() => quickjsAdmission(execgate).inUse.interactive === 1)
    let waitingEnded = false
    const waiting = execgate
      .execute({ language: 'javascript', code: busy(5), lane: 'interactive' }, { tenant: 'acme' })
      .finally(() => (waitingEnded = true))
    await until(() => quickjsAdmission(execgate).queued.interactive === 1)
    const batch = await execgate.execute({ language: 'javascript', code: '7', lane: 'batch' })
    expect(batch).toMatchObject({ status: 'ok', value: 7 })
    // An order, not a clock: the batch run was answered while acme's second run still waited on acme's quota.
    expect(waitingEnded).toBe(false)
    const [firstResult, waitingResult] = await Promise.all([first, waiting])
    expect([firstResult.status, waitingResult.status]).toEqual(['ok', 'ok'])
  }, 30_000)

  test("a tenant's CPU per minute is refused naming the quota once spent", async () => {
    const spend = await execgate.execute({ language: 'javascript', code: busy(200) }, { tenant: 'globex' })
    expect(spend.status).toBe('ok')
    const refused = await execgate.execute({ language: 'javascript', code: '1' }, { tenant: 'globex' })
    expect(refused).toMatchObject({ status: 'unavailable', error: { code: 'EXECGATE_QUOTA_EXCEEDED' } })
    expect(refused.message).toContain('admission.tenants.globex.cpuMsPerMinute')
    expect(refused.retryAfterMs).toBeGreaterThan(50_000)
  }, 30_000)

  test("a tenant's fixed lane wins over the request's", async () => {
    const result = await execgate.execute({ language: 'javascript', code: '1', lane: 'interactive' }, { tenant: 'pinned' })
    expect(result.admission).toMatchObject({ lane: 'batch' })
  })
})

describe('graceful shutdown', () => {
  test('nothing queued is lost: running runs finish, queued ones are answered unavailable with a retry hint', async () => {
    const execgate = await createQuickJsExecgate()
    const request = (code: string): ExecutionRequest => ({ language: 'javascript', code, lane: 'batch' })
    const running = execgate.execute(request(busy(300)))
    await until(() => quickjsAdmission(execgate).inUse.batch === 1)
    const queued = [execgate.execute(request('1')), execgate.execute(request('2'))]
    await until(() => quickjsAdmission(execgate).queued.batch === 2)
    const disposed = execgate.dispose()
    const answers = await Promise.all(queued)
    for (const answer of answers) {
      expect(answer).toMatchObject({ status: 'unavailable', error: { code: 'EXECGATE_SHUTTING_DOWN' } })
      expect(answer.retryAfterMs).toBeGreaterThan(0)
    }
    expect((await running).status).toBe('ok')
    await disposed
    const after = await execgate.execute(request('3'))
    expect(after).toMatchObject({ status: 'unavailable', error: { code: 'EXECGATE_SHUTTING_DOWN' } })
  }, 30_000)
})
