import { DEFAULT_POLICY, createExecgate } from '../src'
import type { Router } from '../src/routing/router'
import * as tokens from '../src/tokens'
import { measureInterleaved, type BenchSection } from './harness'

/**
 * What routing costs: the router's `select` on the default adapters (language, features, health, breakers,
 * required limits, monty's canRun scan), and a monty run through the service with routing against the same run
 * with the adapter pinned by the request (which skips the choice).
 */
export async function run(): Promise<BenchSection> {
  const execgate = await createExecgate({ overrides: { readiness: { enabled: false }, adapters: { pyodide: { warmOnStart: false } }, log: { level: 'silent' } } })
  const router = execgate.container.get<Router>(tokens.Router)
  const policy = DEFAULT_POLICY
  const request = { language: 'python' as const, code: 'total = sum([12.5, 7.25, 3])\nround(total * 1.08, 2)' }
  try {
    let unseen = 0
    const [select, selectUnseen, routed, pinned] = await measureInterleaved([
      { name: 'router.select (python, 5 adapters)', fn: () => router.select(request, policy) },
      // monty's scan of the code is cached by the code: a first-seen request pays it.
      { name: 'router.select, code not seen before', fn: () => router.select({ ...request, code: `${request.code}  # ${unseen++}` }, policy) },
      { name: 'service, routed: python on monty', fn: () => execgate.execute(request) },
      { name: 'service, pinned by the request: python on monty', fn: () => execgate.execute({ ...request, adapter: 'monty' }) },
    ], { iterations: 20_000, batch: 500, warmup: 500 })
    const overheadUs = (routed.p50Ms - pinned.p50Ms) * 1000
    return {
      title: 'routing: the cost of choosing an adapter',
      measurements: [select, selectUnseen, routed, pinned],
      ratios: [
        `router.select p50 = ${(select.p50Ms * 1000).toFixed(1)} µs (target ≤ 10 µs); code not seen before ${(selectUnseen.p50Ms * 1000).toFixed(1)} µs`,
        `routed − pinned p50 = ${overheadUs.toFixed(1)} µs per execution (target ≤ 10 µs)`,
      ],
    }
  } finally {
    await execgate.dispose()
  }
}
