import { MontyAdapter } from '../../adapters/monty'
import { contractContext, runChecked } from '../contract/adapter-contract'

// issue 15: monty runs in worker processes so its native allocations never stay in the server. monty's own
// maxMemory undercounts them, so each process also has a hard bound on its resident memory (maxWorkerMiB): past it
// the watchdog kills the process, the run ends memory_limit saying why, and a fresh process takes the next run.
describe('monty worker processes: the resident-memory bound', () => {
  const adapter = new MontyAdapter({ workers: 1, inlineBudgetMs: 0, maxWorkerMiB: 160 })
  afterAll(() => adapter.dispose())

  test('a bomb the policy allows but the process bound does not ends memory_limit in words; the next run works', async () => {
    await adapter.warmUp()
    const bomb = 'd = {}\ni = 0\nwhile True:\n    d[i] = str(i) * 10\n    i += 1'
    const result = await runChecked(
      adapter,
      { language: 'python', code: bomb },
      contractContext({ memoryMb: 2048, wallTimeMs: 20_000, cpuTimeMs: 20_000 }),
    )
    expect({ status: result.status, message: result.error?.message }).toEqual({
      status: 'memory_limit',
      message: expect.stringMatching(/monty worker process passed its memory bound \(160 MiB resident\) and was stopped/),
    })
    const next = await runChecked(adapter, { language: 'python', code: 'sum(range(10))' }, contractContext())
    expect(next).toMatchObject({ status: 'ok', value: 45 })
  }, 60_000)
})
