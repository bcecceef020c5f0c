import { performance } from 'node:perf_hooks'
import { RunController, stoppedOutcome, type RunStopCause } from '../../src/runtime'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function clock(deadlineInMs: number, extra: { pauseClock?: () => void; restartClock?: () => number } = {}) {
  const abort = new AbortController()
  return { abort, source: { deadline: performance.now() + deadlineInMs, signal: abort.signal, ...extra } }
}

describe('RunController', () => {
  test('the deadline stops the run once, as timeout, and a settled run is never stopped', async () => {
    const { source } = clock(30)
    const causes: RunStopCause[] = []
    const run = new RunController(source).start({ onStop: (cause) => causes.push(cause) })
    run.stop('output_limit')
    run.stop('timeout')
    await sleep(60)
    expect(causes).toEqual(['output_limit'])
    expect(run.settle()).toBe(true)
    expect(run.settle()).toBe(false)

    const quiet: RunStopCause[] = []
    const settledEarly = new RunController(clock(20).source).start({ onStop: (cause) => quiet.push(cause) })
    settledEarly.settle()
    await sleep(50)
    expect(quiet).toEqual([])
  })

  test('a cancel asks politely at once and stops after the grace', async () => {
    const { source, abort } = clock(5000)
    const events: string[] = []
    const started = performance.now()
    const run = new RunController(source, { graceMs: 40 }).start({
      onCancel: () => events.push('cancel'),
      onStop: (cause) => events.push(`stop:${cause}:${Math.round(performance.now() - started)}`),
    })
    abort.abort()
    expect(events).toEqual(['cancel'])
    await sleep(80)
    expect(events).toHaveLength(2)
    const [, stop] = events
    expect(stop).toMatch(/^stop:cancelled:/)
    expect(Number(stop!.split(':')[2])).toBeGreaterThanOrEqual(39)
    run.settle()
  })

  test('a run cancelled before it starts stops at start', () => {
    const { source, abort } = clock(5000)
    abort.abort()
    const causes: RunStopCause[] = []
    new RunController(source).start({ onStop: (cause) => causes.push(cause) })
    expect(causes).toEqual(['cancelled'])
  })

  test('time spent paused (waiting for capacity) moves the deadline, and the service clock is told', async () => {
    const calls: string[] = []
    const { source } = clock(150, { pauseClock: () => calls.push('pause') })
    const run = new RunController(source)
    const before = run.currentDeadline
    run.pauseClock()
    await sleep(170) // past the original deadline while paused: no stop, nothing armed yet
    const after = run.restartClock()
    expect(calls).toEqual(['pause'])
    expect(after - before).toBeGreaterThanOrEqual(165)
    const causes: RunStopCause[] = []
    run.start({ onStop: (cause) => causes.push(cause) })
    await sleep(20)
    expect(causes).toEqual([]) // the code's 150 ms are not used up by the wait
    await sleep(250)
    expect(causes).toEqual(['timeout'])
  })

  test("the service's restartClock decides the new deadline when it keeps the clock", () => {
    const { source } = clock(100, { pauseClock: () => undefined, restartClock: () => 12345 })
    const run = new RunController(source)
    run.pauseClock()
    expect(run.restartClock()).toBe(12345)
    expect(run.currentDeadline).toBe(12345)
  })

  test('intervals stop when the run settles', async () => {
    const run = new RunController(clock(5000).source).start({ onStop: () => undefined })
    let ticks = 0
    run.every(5, () => ticks++)
    await sleep(40)
    run.settle()
    const seen = ticks
    await sleep(40)
    expect(seen).toBeGreaterThan(0)
    expect(ticks).toBe(seen)
  })

  test('runs in flight stop each at its own deadline, earliest first, and none takes a timer of its own', async () => {
    // issue 29: a Timeout armed and cleared per run; one shared timer serves them all (SharedDeadlines).
    const armed = jest.spyOn(global, 'setTimeout')
    const idle = Array.from({ length: 50 }, () => new RunController(clock(60_000).source).start({ onStop: () => undefined }))
    expect(armed.mock.calls.length).toBeLessThanOrEqual(1)
    armed.mockRestore()
    const stopped: string[] = []
    for (const [name, ms] of [
      ['slow', 150],
      ['fast', 30],
      ['middle', 90],
    ] as const)
      new RunController(clock(ms).source).start({ onStop: (cause) => stopped.push(`${name}:${cause}`) })
    const started = performance.now()
    while (stopped.length < 3 && performance.now() - started < 5000) await sleep(5)
    expect(stopped).toEqual(['fast:timeout', 'middle:timeout', 'slow:timeout'])
    for (const run of idle) run.settle()
  })

  test('every adapter answers a stop in the same words', () => {
    expect(stoppedOutcome('timeout', 250)).toEqual({
      status: 'timeout',
      error: { type: 'TimeoutError', message: 'execution passed the 250 ms time limit' },
    })
    expect(stoppedOutcome('cancelled', 250).status).toBe('cancelled')
    expect(stoppedOutcome('output_limit', 250).error.type).toBe('OutputLimit')
  })
})
