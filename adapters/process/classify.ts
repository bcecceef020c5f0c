import type { ExecutionErrorInfo, ExecutionStatus, SecurityPolicy } from '../../src/core'
import { outOfMemoryEvidence } from '../shared/out-of-memory'
import { parseReport, reportOutputs } from '../shared/run-report'
import type { SpawnedRun } from './spawn-sandbox'

export interface RunOutcome {
  status: ExecutionStatus
  value?: unknown
  error?: ExecutionErrorInfo
  /** The runner's rich outputs, unchecked, and how many it left out. */
  outputs?: unknown
  outputsOmitted?: number
}

/** The launcher's exit code when the workspace could not be prepared (see LAUNCHER). */
const LAUNCHER_FAILED = 125
const SIGXCPU = 24

/**
 * Turns how a sandboxed run ended into a status. The runner's report on fd 5 is the first source (it names the
 * exception and its line); without one (bash, a crash, os._exit) the exit code and signal decide.
 */
export function classifyExit(run: SpawnedRun, policy: SecurityPolicy, stderr: string): RunOutcome {
  if (run.stoppedFor === 'timeout') {
    // On a loaded machine the deadline can fire while a program whose allocation was refused is exiting of it (bash's
    // `xrealloc: cannot allocate …` is fatal): when its last words say so, the memory limit broke first, as the service's
    // rule for a cap already passed. Only the last line counts: code that caught the error and ran on is a timeout.
    const dying = run.spawnError ? undefined : outOfMemoryEvidence(stderr.trim().split('\n').pop() ?? '')
    if (dying)
      return { status: 'memory_limit', error: { type: 'MemoryError', message: `memory limit reached (${policy.memoryMb} MiB): ${dying}` } }
    return {
      status: 'timeout',
      error: {
        type: 'TimeoutError',
        message: run.spawnError ?? `execution passed the ${policy.wallTimeMs} ms time limit; the sandbox was killed`,
      },
    }
  }
  if (run.stoppedFor === 'cancelled')
    return { status: 'cancelled', error: { type: 'Cancelled', message: 'the run was cancelled; the sandbox was killed' } }
  if (run.stoppedFor === 'output_limit')
    return {
      status: 'output_limit',
      error: { type: 'OutputLimit', message: `output passed the ${policy.outputBytes}-byte limit; the sandbox was killed` },
    }
  if (run.spawnError)
    return {
      status: 'unavailable',
      error: { type: 'SandboxUnavailable', message: `[execgate] [process] the sandbox could not start: ${run.spawnError}` },
    }

  const report = parseReport(run.report)
  if (report?.ok) return { status: 'ok', value: report.value, ...reportOutputs(report) }
  if (report?.error) {
    if (report.error.type === 'MemoryError')
      return {
        status: 'memory_limit',
        error: { ...report.error, message: `memory limit reached (${policy.memoryMb} MiB): ${report.error.message || 'MemoryError'}` },
        ...reportOutputs(report),
      }
    if (report.error.type === 'PolicyViolation') return { status: 'policy_violation', error: report.error, ...reportOutputs(report) }
    return { status: 'error', error: report.error, ...reportOutputs(report) }
  }

  const code = run.exitCode
  const lastLine = stderr.trim().split('\n').pop() ?? ''
  if (code === 0) return { status: 'ok' }
  if (code === 1 && /^bwrap: /.test(stderr))
    return {
      status: 'unavailable',
      error: { type: 'SandboxUnavailable', message: `[execgate] [process] bubblewrap refused to start the sandbox: ${lastLine}` },
    }
  if (code === LAUNCHER_FAILED)
    return {
      status: 'error',
      error: {
        type: 'WorkspaceError',
        message: `the workspace files could not be unpacked (they may exceed the workspace size): ${lastLine}`,
      },
    }
  if (run.signal === 'SIGXCPU' || code === 128 + SIGXCPU) {
    return {
      status: 'timeout',
      error: { type: 'TimeoutError', message: `the code used its ${policy.cpuTimeMs} ms of CPU time and was stopped` },
    }
  }
  const nesting = /maximum function nesting level exceeded \((\d+)\)/.exec(stderr)
  if (nesting)
    return {
      status: 'error',
      error: { type: 'RecursionError', message: `bash function recursion passed ${nesting[1]} levels (FUNCNEST): ${lastLine}` },
    }
  const outOfMemory = outOfMemoryEvidence(stderr)
  if (outOfMemory)
    return {
      status: 'memory_limit',
      error: { type: 'MemoryError', message: `memory limit reached (${policy.memoryMb} MiB): ${outOfMemory}` },
    }
  const how = code !== null && code > 128 ? `was killed by signal ${code - 128}` : `exited with code ${code ?? run.signal}`
  return { status: 'error', error: { type: 'ExitError', message: `the program ${how}${lastLine ? `: ${lastLine}` : ''}` } }
}
