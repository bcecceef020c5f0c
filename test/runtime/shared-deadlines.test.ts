import { performance } from 'node:perf_hooks'
import { SharedDeadlines } from '../../src/runtime'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits until `done()` holds, checking every 5 ms, for at most `boundMs` (an outer bound, not a timing claim). */
async function until(done: () => boolean, boundMs = 5000): Promise<void> {
  const started = performance.now()
  while (!done() && performance.now() - started < boundMs) await sleep(5)
}

/** The shared timer itself, to see whether it holds the process open (Timeout.hasRef). */
function timerOf(deadlines: SharedDeadlines): NodeJS.Timeout | undefined {
  return (deadlines as unknown as { timer: NodeJS.Timeout | undefined }).timer
}

describe('SharedDeadlines: every run’s backstop on one timer', () => {
  test('each deadline fires once, earliest first, never before its time, whatever order they were armed in', async () => {
    const deadlines = new SharedDeadlines()
    const fired: { name: string; lateMs: number }[] = []
    const arm = (name: string, ms: number) => {
      const due = performance.now() + ms
      deadlines.arm(ms, () => fired.push({ name, lateMs: performance.now() - due }))
    }
    // The latest first: each earlier one armed after it must set the timer again.
    arm('third', 90)
    arm('first', 30)
    arm('second', 60)
    arm('also-second', 60)
    await until(() => fired.length === 4)
    await sleep(20)
    expect(fired.map((item) => item.name)).toEqual(['first', 'second', 'also-second', 'third'])
    for (const item of fired) expect(item.lateMs).toBeGreaterThanOrEqual(0)
    expect(deadlines.size).toBe(0)
  })

  test('a delay that is not a finite number passes at once, as with setTimeout (a context with no deadline)', async () => {
    const deadlines = new SharedDeadlines()
    const fired: string[] = []
    deadlines.arm(NaN, () => fired.push('nan'))
    deadlines.arm(Number.POSITIVE_INFINITY, () => fired.push('infinite'))
    await until(() => fired.length === 2)
    expect(fired.sort()).toEqual(['infinite', 'nan'])
    expect(deadlines.size).toBe(0)
  })

  test('a disarmed deadline never fires, and the timer it set still serves the deadlines after it', async () => {
    const deadlines = new SharedDeadlines()
    const fired: string[] = []
    const early = deadlines.arm(20, () => fired.push('disarmed'))
    deadlines.arm(50, () => fired.push('kept'))
    deadlines.disarm(early)
    deadlines.disarm(early) // twice: nothing
    await until(() => fired.length === 1)
    await sleep(40)
    expect(fired).toEqual(['kept'])
  })

  test('a deadline due before the timer’s is not held back by it (a long run armed first, a short one after)', async () => {
    const deadlines = new SharedDeadlines()
    const fired: string[] = []
    const long = deadlines.arm(60_000, () => fired.push('long'))
    const started = performance.now()
    deadlines.arm(20, () => fired.push('short'))
    await until(() => fired.length === 1)
    // Outer bound only: fired at all, long before the other deadline's minute.
    expect(fired).toEqual(['short'])
    expect(performance.now() - started).toBeLessThan(5000)
    deadlines.disarm(long)
  })

  test('a deadline armed from inside a firing one is kept, and fires in its turn', async () => {
    const deadlines = new SharedDeadlines()
    const fired: string[] = []
    deadlines.arm(20, () => {
      fired.push('first')
      deadlines.arm(20, () => fired.push('armed from the first'))
    })
    deadlines.arm(20, () => fired.push('beside it'))
    await until(() => fired.length === 3)
    expect(fired).toEqual(['first', 'beside it', 'armed from the first'])
    expect(deadlines.size).toBe(0)
  })

  test('the timer holds the process open only while a deadline is armed', () => {
    const deadlines = new SharedDeadlines()
    const first = deadlines.arm(60_000, () => undefined)
    expect(timerOf(deadlines)?.hasRef()).toBe(true)
    deadlines.disarm(first)
    // Still set (the next deadline reuses it) but no longer keeping the process alive: a CLI run exits at once.
    expect(timerOf(deadlines)?.hasRef()).toBe(false)
    const second = deadlines.arm(90_000, () => undefined)
    expect(timerOf(deadlines)?.hasRef()).toBe(true)
    deadlines.disarm(second)
    expect(timerOf(deadlines)?.hasRef()).toBe(false)
    clearTimeout(timerOf(deadlines))
  })
})
