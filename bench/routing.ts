import { DEFAULT_POLICY, createExecgate } from '../src'
import type { Router } from '../src/routing/router'
import * as tokens from '../src/app/tokens'
import { measureInterleaved, type BenchSection } from './harness'

/**
 * What routing costs: the router's `select` on the default adapters (language, features, health, breakers,
 * required limits, monty's canRun scan), and a monty run through the service with routing against the same run
 * with the adapter pinned by the request (which skips the choice).
 */
export async function run(): Promise<BenchSection> {
  const execgate = await createExecgate({
    overrides: { readiness: { enabled: false }, adapters: { pyodide: { warmOnStart: false } }, log: { level: 'silent' } },
  })
  const router = execgate.container.get<Router>(tokens.Router)
  const policy = DEFAULT_POLICY
  const request = { language: 'python' as const, code: 'total = sum([12.5, 7.25, 3])\nround(total * 1.08, 2)' }
  try {
    let unseen = 0
    const [select, selectUnseen, routed, pinned] = await measureInterleaved(
      [
        { name: 'router.select (python, 5 adapters)', fn: () => router.select(request, policy) },
        // monty's scan of the code is cached by the code: a first-seen request pays it.
        {
          name: 'router.select, code not seen before',
          fn: () => router.select({ ...request, code: `${request.code}  # ${unseen++}` }, policy),
        },
        { name: 'service, routed: python on monty', fn: () => execgate.execute(request) },
        { name: 'service, pinned by the request: python on monty', fn: () => execgate.execute({ ...request, adapter: 'monty' }) },
      ],
      { iterations: 20_000, batch: 500, warmup: 500 },
    )
    const overheadUs = (routed.p50Ms - pinned.p50Ms) * 1000
    const rerun = await measureRerun(execgate)
    return {
      title: 'routing: the cost of choosing an adapter',
      measurements: [select, selectUnseen, routed, pinned, ...rerun.measurements],
      ratios: [
        `router.select p50 = ${(select.p50Ms * 1000).toFixed(1)} µs (target ≤ 10 µs); code not ` +
          `seen before ${(selectUnseen.p50Ms * 1000).toFixed(1)} µs`,
        `routed − pinned p50 = ${overheadUs.toFixed(1)} µs per execution (target ≤ 10 µs)`,
        ...rerun.ratios,
      ],
    }
  } finally {
    await execgate.dispose()
  }
}

/**
 * The error path only: code monty fails (`int + bool`) and CPython runs. Routed, monty answers TypeError and the
 * service runs it again on pyodide (src/execution/cpython-rerun.ts); against monty pinned (its error, no rerun)
 * and pyodide pinned (what the rerun itself costs). A run monty answers pays nothing of this.
 */
async function measureRerun(execgate: Awaited<ReturnType<typeof createExecgate>>): Promise<Pick<BenchSection, 'measurements' | 'ratios'>> {
  const code = 'flags = [True, False, True]\ncount = 0\nfor f in flags:\n    count = count + f\ncount'
  const expect = (status: string, adapter: string) => async (request: { adapter?: string }) => {
    const result = await execgate.execute({ language: 'python', code, ...request })
    if (result.status !== status || result.adapter !== adapter)
      throw new Error(`expected ${status} on ${adapter}, got ${result.status} on ${result.adapter}: ${result.message ?? ''}`)
  }
  // pyodide's first start is not the rerun's cost.
  await expect('ok', 'pyodide')({ adapter: 'pyodide' })
  const [rerun, montyPinned, pyodidePinned] = await measureInterleaved(
    [
      { name: 'error path, routed: monty TypeError, rerun on pyodide', fn: () => expect('ok', 'pyodide')({}) },
      { name: 'error path, monty pinned (its TypeError, no rerun)', fn: () => expect('error', 'monty')({ adapter: 'monty' }) },
      { name: 'error path, pyodide pinned (the rerun alone)', fn: () => expect('ok', 'pyodide')({ adapter: 'pyodide' }) },
    ],
    { iterations: 300, batch: 20, warmup: 20 },
  )
  return {
    measurements: [rerun, montyPinned, pyodidePinned],
    ratios: [
      `a monty error rerun on pyodide costs ${(rerun.p50Ms - montyPinned.p50Ms).toFixed(2)} ms ` +
        `more at p50 than monty's error (pyodide alone: ${pyodidePinned.p50Ms.toFixed(2)} ms)`,
    ],
  }
}
