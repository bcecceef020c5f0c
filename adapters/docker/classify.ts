import type { ExecutionStatus } from '../../src/core'
import { outOfMemoryEvidence } from '../shared/out-of-memory'
import { parseReport, reportOutputs } from '../shared/run-report'
import type { ContainerOutcome } from './container-run'

/**
 * How a container run (or an exec into a sandbox's container) ended, as a status: the runner's report first, then the exit code.
 * `subject` is what a stop killed: the container (a run), or the exec's processes (a sandbox's exec).
 */
export function classify(
  outcome: ContainerOutcome,
  memoryMb: number,
  wallTimeMs: number,
  cpuTimeMs: number,
  stderr: string,
  subject = 'the container',
): {
  status: ExecutionStatus
  value?: unknown
  error?: { type: string; message: string; line?: number }
  outputs?: unknown
  outputsOmitted?: number
} {
  if (outcome.stoppedFor === 'timeout')
    return {
      status: 'timeout',
      error: { type: 'TimeoutError', message: `execution passed the ${wallTimeMs} ms time limit; ${subject} was killed` },
    }
  if (outcome.stoppedFor === 'cancelled')
    return { status: 'cancelled', error: { type: 'Cancelled', message: `the run was cancelled; ${subject} was killed` } }
  if (outcome.stoppedFor === 'output_limit')
    return { status: 'output_limit', error: { type: 'OutputLimit', message: `output passed the limit; ${subject} was killed` } }
  if (outcome.engineError)
    return {
      status: 'unavailable',
      error: { type: 'EngineError', message: `[execgate] [docker] the engine refused the run: ${outcome.engineError}` },
    }
  const report = parseReport(outcome.report)
  if (report?.ok) return { status: 'ok', value: report.value, ...reportOutputs(report) }
  if (report?.error) {
    if (report.error.type === 'MemoryError')
      return {
        status: 'memory_limit',
        error: { ...report.error, message: `memory limit reached (${memoryMb} MiB): ${report.error.message || 'MemoryError'}` },
      }
    if (report.error.type === 'PolicyViolation') return { status: 'policy_violation', error: report.error, ...reportOutputs(report) }
    return { status: 'error', error: report.error, ...reportOutputs(report) }
  }
  const lastLine = stderr.trim().split('\n').pop() ?? ''
  // 137 without our own kill: the cgroup's OOM killer (some engines leave OOMKilled false).
  if (outcome.exitCode === 137)
    return {
      status: 'memory_limit',
      error: {
        type: 'MemoryError',
        message: `memory limit reached (${memoryMb} MiB): ${subject} was killed${outcome.oomKilled ? ' by the OOM killer' : ''}`,
      },
    }
  if (outcome.exitCode === 152)
    return { status: 'timeout', error: { type: 'TimeoutError', message: `the code used its ${cpuTimeMs} ms of CPU time and was stopped` } }
  const outOfMemory = outOfMemoryEvidence(stderr)
  if (outOfMemory)
    return { status: 'memory_limit', error: { type: 'MemoryError', message: `memory limit reached (${memoryMb} MiB): ${outOfMemory}` } }
  if (outcome.exitCode === 0) return { status: 'ok' }
  return {
    status: 'error',
    error: { type: 'ExitError', message: `the program exited with code ${outcome.exitCode}${lastLine ? `: ${lastLine}` : ''}` },
  }
}
