import { QuickJsAdapter } from '../../adapters/quickjs'
import { ConfigRouter } from '../../src/routing/config-router'
import { HealthBoard } from '../../src/readiness/health'
import { DEFAULT_POLICY, createExecgate, type Execgate } from '../../src'
import type { CodeExecutionAdapter } from '../../src/core'
import { disposableExecgates } from './disposable-execgates'
import { SwitchableAdapter } from './fakes'

const silent = { log: { level: 'silent' as const } }
const execgateWith = disposableExecgates()

// Without the placeholder, which runs nothing and so holds every limit and offers every language.
let runnersOnly: Promise<Execgate> | undefined
const runnersWithoutPlaceholder = () => (runnersOnly ??= execgateWith({ execution: { enabled: ['quickjs', 'process'] } }))

describe('routing by language and tier (real adapters)', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await execgateWith({ execution: { enabled: ['placeholder', 'quickjs', 'monty', 'process'] } })
  })

  test('each language goes to its cheapest capable adapter', async () => {
    const js = await execgate.execute({ language: 'javascript', code: '6 * 7' })
    const py = await execgate.execute({ language: 'python', code: '6 * 7' })
    const sh = await execgate.execute({ language: 'bash', code: 'echo 42' })
    expect([js.adapter, py.adapter, sh.adapter]).toEqual(['quickjs', 'monty', 'process'])
    expect([js.value, py.value, sh.stdout]).toEqual([42, 42, '42\n'])
    expect(js.route?.reason).toBe('cheapest available adapter for javascript')
  })

  test('routing.tierOrder changes the cost order', async () => {
    const sandboxFirst = await execgateWith({ execution: { enabled: ['quickjs', 'process'] }, routing: { tierOrder: [4, 1, 3, 2, 0] } })
    const result = await sandboxFirst.execute({ language: 'javascript', code: '6 * 7' })
    expect({ adapter: result.adapter, value: result.value }).toEqual({ adapter: 'process', value: 42 })
  })

  test('features the request needs narrow the choice: files need a workspace, a session needs sessions', async () => {
    const { DEFAULT_POLICY } = await import('../../src')
    const files = [{ path: 'in.txt', content: 'hello' }]
    const result = await execgate.execute(
      { language: 'bash', code: 'cat in.txt', files },
      { basePolicy: { ...DEFAULT_POLICY, filesystem: 'read_only' } },
    )
    expect({ adapter: result.adapter, stdout: result.stdout }).toEqual({ adapter: 'process', stdout: 'hello' })
    const runners = await runnersWithoutPlaceholder()
    const noSessions = await runners.execute({ language: 'bash', code: 'echo 1', sessionId: 's1' })
    expect(noSessions.status).toBe('unavailable')
    expect(noSessions.message).toContain('no enabled adapter runs bash with sessions')
    expect(await runners.execute({ language: 'javascript', code: '1', sessionId: 's1' })).toMatchObject({
      status: 'ok',
      adapter: 'quickjs',
    })
  })

  test('a required limit no adapter enforces is refused as policy_violation naming it', async () => {
    const runners = await runnersWithoutPlaceholder()
    const result = await runners.execute({ language: 'bash', code: 'echo hi', policy: { required: ['hostCalls'] } })
    expect(result.status).toBe('policy_violation')
    expect(result.message).toMatch(/requires hostCalls to be enforced, and no enabled adapter for bash enforces it \(process cannot\)/)
    const js = await runners.execute({ language: 'javascript', code: '1', policy: { required: ['hostCalls', 'processes'] } })
    expect({ status: js.status, adapter: js.adapter }).toEqual({ status: 'ok', adapter: 'quickjs' })
  })

  test('a pinned adapter that cannot enforce a required limit is refused', async () => {
    const result = await execgate.execute({ language: 'python', code: '1', adapter: 'process', policy: { required: ['hostCalls'] } })
    expect(result.status).toBe('policy_violation')
    expect(result.message).toContain('process does not enforce it')
  })

  test('explainPolicy reports the enforcement table and required limits', () => {
    const explanation = execgate.explainPolicy('process', {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- the module under test, read once here
      ...(execgate.explainPolicy('quickjs') && require('../../src').DEFAULT_POLICY),
      required: ['hostCalls', 'memory'],
    })
    expect(explanation.usable).toBe(false)
    expect(explanation.rows.find((row) => row.limit === 'hostCalls')).toMatchObject({
      enforcement: 'none',
      required: true,
      satisfied: false,
    })
    expect(explanation.rows.find((row) => row.limit === 'memory')).toMatchObject({
      enforcement: 'hard',
      required: true,
      satisfied: true,
      setting: '128 MiB',
    })
    expect(() => execgate.explainPolicy('nope')).toThrow(/unknown adapter "nope"/)
  })
})

describe('fallback', () => {
  let quickjs: QuickJsAdapter
  let remote: SwitchableAdapter
  let execgate: Execgate
  beforeAll(async () => {
    quickjs = new QuickJsAdapter()
    remote = new SwitchableAdapter('remote', new QuickJsAdapter(), 1)
    // The remote is listed first, so at equal tier it is chosen first.
    execgate = await execgateWith(
      { execution: { fallback: ['quickjs'] }, routing: { breaker: { failures: 3, windowMs: 60_000, cooldownMs: 300 } } },
      [remote, quickjs],
    )
  })
  afterAll(async () => {
    await quickjs.dispose()
  })
  beforeEach(() => {
    remote.down = false
    remote.crash = false
  })

  test('an unavailable backend is rerouted, and the result says from where and why', async () => {
    remote.down = true
    const result = await execgate.execute({ language: 'javascript', code: '6 * 7' })
    expect({ status: result.status, adapter: result.adapter, value: result.value }).toEqual({ status: 'ok', adapter: 'quickjs', value: 42 })
    expect(result.fallbackFrom).toEqual({ adapter: 'remote', reason: '[execgate] [remote] backend unreachable' })
  })

  test('a crashing backend is rerouted', async () => {
    remote.crash = true
    const result = await execgate.execute({ language: 'javascript', code: '6 * 7' })
    expect({ adapter: result.adapter, value: result.value, from: result.fallbackFrom?.adapter }).toEqual({
      adapter: 'quickjs',
      value: 42,
      from: 'remote',
    })
    expect(result.fallbackFrom?.reason).toContain('remote backend crashed')
  })

  test("the user's own error, timeout or memory limit is never retried elsewhere", async () => {
    for (const [code, status, policy] of [
      ["throw new Error('mine')", 'error', {}],
      ['while (true) {}', 'timeout', { wallTimeMs: 300 }],
      ['const k = []; while (true) k.push(new Uint8Array(1 << 20))', 'memory_limit', { memoryMb: 16 }],
    ] as const) {
      const before = remote.calls
      // A fresh backend's first memory bomb touches new pages, slow on some VMs: time enough for the limit to bite.
      const result = await execgate.execute(
        { language: 'javascript', code, policy },
        { basePolicy: { ...DEFAULT_POLICY, wallTimeMs: 15_000, cpuTimeMs: 15_000 } },
      )
      expect({ status: result.status, adapter: result.adapter, fallbackFrom: result.fallbackFrom }).toEqual({
        status,
        adapter: 'remote',
        fallbackFrom: undefined,
      })
      expect(remote.calls).toBe(before + 1)
    }
  })

  test('the breaker opens after repeated failures, skips the adapter, and closes after a good probe', async () => {
    remote.down = true
    for (let i = 0; i < 3; i++) await execgate.execute({ language: 'javascript', code: '1' })
    expect(execgate.status().adapters.find((adapter) => adapter.name === 'remote')?.breaker).toBe('open')
    const callsWhileOpen = remote.calls
    const skipped = await execgate.execute({ language: 'javascript', code: '2' })
    expect(remote.calls).toBe(callsWhileOpen) // not even tried
    expect({ adapter: skipped.adapter, from: skipped.fallbackFrom?.adapter }).toEqual({ adapter: 'quickjs', from: 'remote' })
    expect(skipped.fallbackFrom?.reason).toMatch(/circuit breaker open/)
    remote.down = false
    await new Promise((resolve) => setTimeout(resolve, 350)) // the cooldown
    const probe = await execgate.execute({ language: 'javascript', code: '3' })
    expect({ adapter: probe.adapter, value: probe.value }).toEqual({ adapter: 'remote', value: 3 })
    expect(execgate.status().adapters.find((adapter) => adapter.name === 'remote')?.breaker).toBe('closed')
  })

  test('a request that pins an adapter is not moved elsewhere', async () => {
    remote.down = true
    const result = await execgate.execute({ language: 'javascript', code: '1', adapter: 'remote' })
    expect({ status: result.status, adapter: result.adapter }).toEqual({ status: 'unavailable', adapter: 'remote' })
  })
})

describe('policy profiles', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await execgateWith({
      execution: { enabled: ['quickjs', 'monty'] },
      security: {
        profiles: { analytics: { memoryMb: 512, wallTimeMs: 10_000 }, strict: { wallTimeMs: 1000, allowedImports: [] } },
        languageProfiles: { python: 'analytics' },
      },
    })
  })

  test("a language's profile is its requests' starting policy", async () => {
    const py = await execgate.execute({ language: 'python', code: '1', memoryMb: 400 })
    expect(py.status).toBe('ok')
    const js = await execgate.execute({ language: 'javascript', code: '1', memoryMb: 400 })
    expect(js.status).toBe('policy_violation')
  })

  test("a caller's (tenant's) profile wins over the language's; an unknown one is refused", async () => {
    const strict = await execgate.execute({ language: 'python', code: 'import math\n1' }, { profile: 'strict' })
    expect(strict.status).toBe('policy_violation')
    const unknown = await execgate.execute({ language: 'python', code: '1' }, { profile: 'gold' })
    expect(unknown).toMatchObject({
      status: 'invalid_request',
      message: expect.stringContaining('no policy profile named "gold"; profiles: data, analytics, strict'),
    })
    expect(execgate.explainPolicy('monty', 'analytics').rows.find((row) => row.limit === 'memory')?.setting).toBe('512 MiB')
  })

  test('bad profiles stop start-up naming the key', async () => {
    await expect(createExecgate({ overrides: { ...silent, security: { profiles: { x: { memoryMb: -1 } } } } })).rejects.toThrow(
      /security.profiles: profile x.memoryMb: must be >= 1/,
    )
    await expect(createExecgate({ overrides: { ...silent, security: { profiles: { x: { colour: 1 } as never } } } })).rejects.toThrow(
      /profile x.colour: is not a policy field/,
    )
    await expect(createExecgate({ overrides: { ...silent, security: { languageProfiles: { python: 'missing' } } } })).rejects.toThrow(
      /security.languageProfiles.python: no profile named "missing"/,
    )
    await expect(createExecgate({ overrides: { ...silent, routing: { tierOrder: [1, 1] } } })).rejects.toThrow(
      /routing.tierOrder: must list tiers 0-4/,
    )
    await expect(createExecgate({ overrides: { ...silent, readiness: { schedule: 'often' } } })).rejects.toThrow(
      /readiness.schedule: must be a node-cron schedule/,
    )
    await expect(createExecgate({ overrides: { ...silent, execution: { enabled: ['quickjs'], futureAdapter: 'monty' } } })).rejects.toThrow(
      /execution.futureAdapter: "monty" is not in execution.enabled/,
    )
  })
})

describe('a latency budget', () => {
  test('passes over a pinned or cheaper adapter whose last readiness check took longer, and only then', async () => {
    const quickjs = new QuickJsAdapter({ workers: 1 })
    const placeholderFree: CodeExecutionAdapter[] = [
      quickjs,
      (await runnersWithoutPlaceholder()).adapters().find((item) => item.name === 'process')!,
    ]
    const registry = {
      get: (name: string) => placeholderFree.find((item) => item.name === name),
      list: () => placeholderFree,
      knownNames: () => placeholderFree.map((item) => item.name),
    }
    const board = new HealthBoard({ unhealthyAfter: 1, healthyAfter: 1 })
    const checkedAt = new Date().toISOString()
    board.record('process', { status: 'available', latencyMs: 900, checkedAt })
    board.record('quickjs', { status: 'available', latencyMs: 2, checkedAt })
    const request = { language: 'javascript' as const, code: '1' }
    try {
      const pinned = new ConfigRouter(registry, 'process', { health: board })
      expect(pinned.select(request, DEFAULT_POLICY).adapter?.name).toBe('process')
      expect(pinned.select(request, DEFAULT_POLICY, { latencyBudgetMs: 1000 }).adapter?.name).toBe('process')
      const fast = pinned.select(request, DEFAULT_POLICY, { latencyBudgetMs: 500 })
      expect(fast).toMatchObject({
        adapter: { name: 'quickjs' },
        skipped: { adapter: 'process', reason: "its last readiness check took 900 ms, over the caller's 500 ms latency budget" },
      })
      // The cheapest is slow, a dearer one fast: the dearer one, with the reason.
      board.record('quickjs', { status: 'available', latencyMs: 800, checkedAt })
      board.record('process', { status: 'available', latencyMs: 20, checkedAt })
      const auto = new ConfigRouter(registry, 'auto', { health: board })
      expect(auto.select(request, DEFAULT_POLICY, { latencyBudgetMs: 500 })).toMatchObject({
        adapter: { name: 'process' },
        reason: 'faster than quickjs for a 500 ms budget',
      })
      // Everything slow: the usual order, nothing skipped.
      board.record('process', { status: 'available', latencyMs: 700, checkedAt })
      expect(auto.select(request, DEFAULT_POLICY, { latencyBudgetMs: 500 })).toMatchObject({
        adapter: { name: 'quickjs' },
        reason: 'cheapest available adapter for javascript',
      })
    } finally {
      await quickjs.dispose()
    }
  })
})
