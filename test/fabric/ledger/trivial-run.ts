import type { ExecutionResult, RunInfo } from '../../../src'

/** A trivial quickjs run's result and RunInfo, as the execution service hands them to the ledger: `run-<index>`. */
export function trivialRun(index: number): { result: ExecutionResult; info: RunInfo } {
  const result = {
    status: 'ok',
    adapter: 'quickjs',
    traceId: `trace-${index}`,
    runId: `run-${index}`,
    stdout: '',
    stderr: '',
    value: index,
    durationMs: 1,
    truncated: false,
    usage: { wallMs: 1 },
  } as unknown as ExecutionResult
  return { result, info: { runId: `run-${index}`, startedAt: Date.now(), endedAt: Date.now() } }
}
