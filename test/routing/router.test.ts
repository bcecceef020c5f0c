import { QuickJsAdapter } from '../../adapters/quickjs'
import { ConfigRouter } from '../../src/routing/config-router'
import { HealthBoard } from '../../src/readiness/health'
import { DEFAULT_POLICY, createExecgate, type Execgate, type SwitchEvent } from '../../src'
import type { CodeExecutionAdapter } from '../../src/core'
import { LeakyAdapter, SwitchableAdapter } from './fakes'

const silent = { log: { level: 'silent' as const } }
const open: Execgate[] = []
async function execgateWith(overrides: object, adapters?: CodeExecutionAdapter[]): Promise<Execgate> {
  const execgate = await createExecgate({ overrides: { ...silent, readiness: { enabled: false }, ...overrides }, adapters })
  open.push(execgate)
  return execgate
}
afterAll(async () => {
  await Promise.all(open.map((execgate) => execgate.dispose()))
})

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

describe('readiness monitor', () => {
  test('switches to the future adapter when it becomes available and away when it fails, with events', async () => {
    const future = new SwitchableAdapter('future', new QuickJsAdapter(), 2)
    future.down = true
    const quickjs = new QuickJsAdapter()
    const execgate = await execgateWith(
      { execution: { adapter: 'quickjs', futureAdapter: 'future' }, readiness: { enabled: false, unhealthyAfter: 1, healthyAfter: 1 } },
      [quickjs, future],
    )
    const switches: SwitchEvent[] = []
    execgate.readiness.on('switch', (event) => switches.push(event))
    await execgate.checkNow()
    expect(execgate.status().active).toBe('quickjs')
    expect((await execgate.execute({ language: 'javascript', code: '1' })).adapter).toBe('quickjs')

    future.down = false
    const status = await execgate.checkNow()
    expect(status.active).toBe('future')
    expect(switches).toEqual([expect.objectContaining({ from: 'quickjs', to: 'future', reason: 'the future adapter future is available' })])
    // A quickjs worker still starting adds "…was still warming up" to the reason: the switch is what is checked.
    const onFuture = await execgate.execute({ language: 'javascript', code: '6 * 7' })
    expect({ adapter: onFuture.adapter, value: onFuture.value, reason: onFuture.route?.reason }).toEqual({
      adapter: 'future',
      value: 42,
      reason: expect.stringMatching(/^the active adapter \(switched by the readiness monitor\)/),
    })

    future.down = true
    await execgate.checkNow()
    expect(execgate.status().active).toBe('quickjs')
    expect(switches[1]).toMatchObject({ from: 'future', to: 'quickjs' })
    expect(switches[1]!.reason).toMatch(/future adapter future is unavailable \(future backend unreachable\)/)
    expect(execgate.status().lastSwitch).toEqual(switches[1])
    await quickjs.dispose()
  })

  test('an unavailable configured adapter gives way to the cheapest available one', async () => {
    const primary = new SwitchableAdapter('primary', new QuickJsAdapter(), 2)
    const quickjs = new QuickJsAdapter()
    const execgate = await execgateWith(
      { execution: { adapter: 'primary' }, readiness: { enabled: false, unhealthyAfter: 2, healthyAfter: 1 } },
      [primary, quickjs],
    )
    primary.down = true
    await execgate.checkNow()
    // Hysteresis: one failed check after a good state is not enough... but the first check has no good state.
    expect(execgate.status().active).toBe('auto')
    const result = await execgate.execute({ language: 'javascript', code: '1 + 1' })
    expect({ adapter: result.adapter, value: result.value }).toEqual({ adapter: 'quickjs', value: 2 })
    primary.down = false
    await execgate.checkNow()
    expect(execgate.status().active).toBe('primary')
    primary.down = true
    await execgate.checkNow()
    expect(execgate.status().active).toBe('primary') // one failure in a row: not yet (unhealthyAfter 2)
    await execgate.checkNow()
    expect(execgate.status().active).toBe('auto')
    await quickjs.dispose()
  })

  test('a first check that runs out of time does not mark the adapter down at once; one that answers "unavailable" does', async () => {
    const starting = new SwitchableAdapter('starting', new QuickJsAdapter(), 2)
    starting.checkDelayMs = 300
    const missing = new SwitchableAdapter('missing', new QuickJsAdapter(), 2)
    missing.down = true
    const execgate = await execgateWith({ readiness: { enabled: false, timeoutMs: 100, unhealthyAfter: 2, healthyAfter: 1 } }, [
      starting,
      missing,
    ])
    const first = await execgate.checkNow()
    const health = (name: string) => first.adapters.find((adapter) => adapter.name === name)!.health
    expect(health('starting')).toMatchObject({
      state: 'unknown',
      failuresInARow: 1,
      reason: 'the availability check took longer than 100 ms',
    })
    expect(health('missing')).toMatchObject({ state: 'unavailable', reason: 'missing backend unreachable' })
    const result = await execgate.execute({ language: 'javascript', code: '6 * 7' })
    expect({ adapter: result.adapter, value: result.value }).toEqual({ adapter: 'starting', value: 42 })
    // Still no answer the second time: that is the hysteresis's two failures in a row.
    const second = await execgate.checkNow()
    expect(second.adapters.find((adapter) => adapter.name === 'starting')!.health).toMatchObject({
      state: 'unavailable',
      reason: 'the availability check took longer than 100 ms',
    })
    await starting.dispose()
    await missing.dispose()
  })

  test('enforcement canaries mark an adapter whose limits do not hold as degraded; real ones stay available', async () => {
    const quickjs = new QuickJsAdapter()
    const execgate = await execgateWith({ readiness: { enabled: false, canaries: true } }, [new LeakyAdapter(), quickjs])
    const status = await execgate.checkNow()
    const leaky = status.adapters.find((adapter) => adapter.name === 'leaky')!
    expect(leaky.health.state).toBe('degraded')
    expect(leaky.health.reason).toContain('canary "infinite loop" did not hold: expected timeout, got ok')
    expect(leaky.health.reason).toContain('canary "output flood" did not hold')
    expect(status.adapters.find((adapter) => adapter.name === 'quickjs')!.health).toMatchObject({ state: 'available', reason: undefined })
    // Degraded adapters come after healthy ones.
    expect((await execgate.execute({ language: 'javascript', code: '1' })).adapter).toBe('quickjs')
    await quickjs.dispose()
  }, 60_000)

  test('the OS sandbox holds its canaries, the fork bomb included', async () => {
    const execgate = await execgateWith({ execution: { enabled: ['process'] }, readiness: { enabled: false, canaries: true } })
    const status = await execgate.checkNow()
    expect(status.adapters[0]!.health).toMatchObject({ state: 'available', reason: undefined })
  }, 60_000)

  test('the schedule runs checks by itself', async () => {
    const quickjs = new QuickJsAdapter()
    const execgate = await execgateWith({ readiness: { enabled: true, schedule: '* * * * * *' } }, [quickjs])
    const checked = await new Promise<string>((resolve) =>
      execgate.readiness.once('health', (event) => resolve(`${event.adapter}: ${event.from} → ${event.to}`)),
    )
    expect(checked).toBe('quickjs: unknown → available')
    await execgate.dispose()
    await quickjs.dispose()
    // The budget covers start-up and warm-up too, not only the one-second schedule: on a loaded 2-core machine those
    // alone took over 10 s in a whole-suite run. The file's other tests wait 60 s; the schedule is what is tested, not speed.
  }, 60_000)
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
