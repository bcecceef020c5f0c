import { QuickJsAdapter } from '../../adapters/quickjs'
import type { SwitchEvent } from '../../src'
import { disposableExecgates } from './disposable-execgates'
import { LeakyAdapter, SwitchableAdapter } from './fakes'

/** The readiness monitor on real adapters (and fakes wrapping them): switching, first checks, canaries, its schedule. */

const execgateWith = disposableExecgates()

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
