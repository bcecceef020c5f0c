import { reservedSlots, resolveLane } from '../../src/execution/admission/lanes'
import { SlotPool } from '../../src/execution/admission/slot-pool'
import { WaitQueue } from '../../src/execution/admission/wait-queue'

describe('admission rules', () => {
  test('the reserved share rounds up but always leaves batch one slot', () => {
    expect(reservedSlots(2, 0.5)).toBe(1)
    expect(reservedSlots(4, 0.3)).toBe(2)
    expect(reservedSlots(3, 1)).toBe(2)
    expect(reservedSlots(1, 0.5)).toBe(0)
    expect(reservedSlots(8, 0)).toBe(0)
  })

  test("a tenant's fixed lane wins, then the request's, then the tenant's default, then the configured one", () => {
    expect(resolveLane('interactive', { lane: 'batch' }, 'interactive')).toBe('batch')
    expect(resolveLane('interactive', { defaultLane: 'batch' }, 'batch')).toBe('interactive')
    expect(resolveLane(undefined, { defaultLane: 'interactive' }, 'batch')).toBe('interactive')
    expect(resolveLane(undefined, undefined, 'batch')).toBe('batch')
  })

  test('batch never takes a reserved slot; interactive takes any free one', () => {
    const pool = new SlotPool(3, 1)
    pool.take('batch')
    pool.take('batch')
    expect(pool.canTake('batch')).toBe(false)
    expect(pool.canTake('interactive')).toBe(true)
    pool.take('interactive')
    expect(pool.canTake('interactive')).toBe(false)
    pool.release('batch')
    expect(pool.canTake('batch')).toBe(true)
  })

  test('the queue orders by priority, then arrival, and refuses past its limit', () => {
    const queue = new WaitQueue<{ priority: number; id: string }>(3)
    queue.push({ priority: 0, id: 'a' })
    queue.push({ priority: 5, id: 'b' })
    queue.push({ priority: 0, id: 'c' })
    expect(queue.full).toBe(true)
    expect(queue.drain().map((item) => item.id)).toEqual(['b', 'a', 'c'])
  })
})

describe('adapters declare their slots from their own pool options', () => {
  test('quickjs and monty count worker threads, pyodide pool processes, process its sandbox uids (as root)', async () => {
    const { QuickJsAdapter } = await import('../../adapters/quickjs')
    const { MontyAdapter } = await import('../../adapters/monty')
    const { PyodideAdapter } = await import('../../adapters/pyodide')
    const { ProcessAdapter } = await import('../../adapters/process')
    const adapters = [
      new QuickJsAdapter({ workers: 3 }),
      new MontyAdapter({ workers: 1 }),
      new PyodideAdapter({ poolSize: 4, warmOnStart: false }),
      new ProcessAdapter({ sandboxUids: '61000-61005' }),
    ]
    try {
      expect(adapters.map((adapter) => adapter.capabilities.concurrency)).toEqual([3, 1, 4, process.getuid?.() === 0 ? 6 : undefined])
    } finally {
      await Promise.all(adapters.map((adapter) => adapter.dispose()))
    }
  })
})
