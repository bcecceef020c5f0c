import { QuickJsAdapter } from '../../adapters/quickjs'
import { contractContext, runChecked } from '../contract/adapter-contract'

// issue 15: QuickJS's malloc limit did not hold for a filled `new Array(1e6)` in a loop (one worker grew to 2 GB under a
// 64 MiB limit and the run ended `timeout`), and WebAssembly memory never shrinks, so the server kept what its
// workers had grown. The worker's wasm memory now has a ceiling (maxMemoryMiB) and a grown worker is replaced.
const BOMB = 'const a = [];\nwhile (true) a.push(new Array(1e6).fill(1));'

describe('quickjs: what a memory bomb can make the host process hold', () => {
  const adapter = new QuickJsAdapter({ workers: 1, maxMemoryMiB: 256, recycleAboveMiB: 128 })
  afterAll(() => adapter.dispose())

  test('the bomb ends memory_limit at the ceiling, and the host gives the memory back after the worker is replaced', async () => {
    await adapter.warmUp()
    const rssMb = () => process.memoryUsage().rss / 1048576
    const before = rssMb()
    let peak = before
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 5)
    try {
      for (let run = 0; run < 3; run++) {
        const result = await runChecked(
          adapter,
          { language: 'javascript', code: BOMB },
          contractContext({ memoryMb: 64, wallTimeMs: 5000, cpuTimeMs: 5000 }),
        )
        expect(result.status).toBe('memory_limit')
      }
      // The replaced worker's memory goes with its thread; the next run starts on a fresh one.
      const next = await runChecked(adapter, { language: 'javascript', code: '6 * 7' }, contractContext())
      expect(next).toMatchObject({ status: 'ok', value: 42 })
      await new Promise((resolve) => setTimeout(resolve, 500))
    } finally {
      clearInterval(sampler)
    }
    // Without the ceiling one bomb took the host up by ~2 GB; with it a worker holds at most 256 MiB, and none of it stays.
    expect(peak - before).toBeLessThan(400)
    expect(rssMb() - before).toBeLessThan(120)
  }, 60_000)

  // The lambda function ran the corpus's map-of-objects bomb under a policy above the ceiling: the linear memory ran
  // out before QuickJS's malloc limit, QuickJS threw `null`, and the run ended `error` with "Uncaught null".
  test('a policy allowing more than the ceiling still ends a bomb memory_limit, in words', async () => {
    const code = "const m = new Map();\nfor (let i = 0; ; i++) m.set(i, { i, s: 'v' + i });"
    const result = await runChecked(
      adapter,
      { language: 'javascript', code },
      contractContext({ memoryMb: 1024, wallTimeMs: 20_000, cpuTimeMs: 20_000 }),
    )
    expect({ status: result.status, message: result.error?.message }).toEqual({
      status: 'memory_limit',
      message: expect.stringMatching(/out of memory/),
    })
    const next = await runChecked(adapter, { language: 'javascript', code: '6 * 7' }, contractContext())
    expect(next).toMatchObject({ status: 'ok', value: 42 })
  }, 60_000)
})
