import { ProcessAdapter } from '../../adapters/process'
import { CalibratedShellCost, scanShellScript } from '../../adapters/shared/shell-script'
import { contractContext, runChecked } from '../contract/adapter-contract'

describe("the shell cost model learns its fixed cost from the adapter's own runs", () => {
  const scan = scanShellScript('cat data.csv | grep 2026 | wc -l')

  test('ok runs move the fixed cost toward what they took, less their per-byte part', () => {
    const cost = new CalibratedShellCost({ startupMs: 45, nsPerByteStage: 4 })
    // 3 stages × 100 KB × 4 ns = 1.2 ms of per-byte cost on top of a 20 ms start.
    for (let run = 0; run < 30; run++) cost.observe(scan, 100_000, 21.2)
    expect(cost.currentStartupMs()).toBeCloseTo(20, 0)
    expect(cost.estimate(scan, 100_000)).toBeCloseTo(21.2, 0)
  })

  test('a run ten times slower than the estimate, or faster than its per-byte part alone, is not learned from', () => {
    const cost = new CalibratedShellCost({ startupMs: 20, nsPerByteStage: 4 })
    cost.observe(scan, 0, 500)
    cost.observe(scan, 10_000_000, 1)
    expect(cost.currentStartupMs()).toBe(20)
  })
})

describe('the process adapter estimates bash from what its own runs took', () => {
  const adapter = new ProcessAdapter()
  afterAll(() => adapter.dispose())

  test('after a few trivial scripts, its estimate for one is near what they took', async () => {
    const took: number[] = []
    for (let run = 0; run < 12; run++) {
      const started = performance.now()
      const result = await runChecked(
        adapter,
        { language: 'bash', code: 'echo hi | wc -c' },
        contractContext({ wallTimeMs: 5000, cpuTimeMs: 5000 }),
      )
      took.push(performance.now() - started)
      expect(result.status).toBe('ok')
    }
    const median = took.sort((a, b) => a - b)[took.length >> 1]!
    const estimate = adapter.estimateMs('echo hi | wc -c', 'bash')!
    // Started from the configured 45 ms; the learned value follows this machine, whatever its load.
    expect(estimate).toBeGreaterThan(median / 3)
    expect(estimate).toBeLessThan(median * 3)
  }, 60_000)
})
