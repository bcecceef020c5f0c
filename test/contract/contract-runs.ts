import { performance } from 'node:perf_hooks'
import {
  EXECUTION_STATUSES,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type SecurityPolicy,
} from '../../src/core'
import { DEFAULT_POLICY } from '../../src/policy'
import { DefaultExecutionService } from '../../src/execution/execution-service'
import { ConfigRouter } from '../../src/routing/config-router'
import { createLogger } from '../../src/observability/logger'

/**
 * How the adapter contract (adapter-contract.ts) and adapters' own tests run a request: the context a run gets, a run
 * whose result is checked well-formed whatever its status, and an ExecutionService around one adapter.
 */

/** The limits of a test that is not about time: 10x the default wall time, so a loaded machine does not end it first. */
export const UNHURRIED: Partial<SecurityPolicy> = { wallTimeMs: 50_000, cpuTimeMs: 50_000 }

export function contractContext(policy: Partial<SecurityPolicy> = {}, extra: Partial<ExecutionContext> = {}): ExecutionContext {
  const merged: SecurityPolicy = { ...DEFAULT_POLICY, ...policy }
  return {
    traceId: `contract-${Math.random().toString(36).slice(2)}`,
    policy: merged,
    signal: new AbortController().signal,
    deadline: performance.now() + merged.wallTimeMs,
    ...extra,
  }
}

/** Runs a request and asserts the result is well-formed, whatever its status. */
export async function runChecked(
  adapter: CodeExecutionAdapter,
  request: ExecutionRequest,
  context: ExecutionContext,
): Promise<ExecutionResult> {
  const result = await adapter.execute(request, context)
  expect(EXECUTION_STATUSES).toContain(result.status)
  expect(result.adapter).toBe(adapter.name)
  expect(typeof result.stdout).toBe('string')
  expect(typeof result.stderr).toBe('string')
  expect(typeof result.truncated).toBe('boolean')
  expect(typeof result.usage).toBe('object')
  if (result.status !== 'ok') expect(result.message ?? result.error?.message).toBeTruthy()
  return result
}

/** An ExecutionService around one adapter, without taking ownership of it (disposing stays with the test). */
export function serviceFor(
  adapter: CodeExecutionAdapter,
  policy: SecurityPolicy = DEFAULT_POLICY,
  routing: 'pinned' | 'auto' = 'pinned',
): DefaultExecutionService {
  const registry = {
    get: (name: string) => (name === adapter.name ? adapter : undefined),
    list: () => [adapter],
    knownNames: () => [adapter.name],
  }
  return new DefaultExecutionService({
    registry,
    router: new ConfigRouter(registry, routing === 'auto' ? 'auto' : adapter.name),
    basePolicy: policy,
    logger: createLogger('silent'),
    graceMs: 2000,
  })
}
