import type { ExecutionErrorInfo, ExecutionStatus, SecurityPolicy } from '../../src/core'
import type { SpawnedRun } from './spawn-sandbox'

export interface RunOutcome {
  status: ExecutionStatus
  value?: unknown
  error?: ExecutionErrorInfo
}

/** What an out-of-memory end looks like from each interpreter once an allocation is refused (rlimit or cgroup). */
const OUT_OF_MEMORY = /heap out of memory|Allocation failed|cannot allocate|Cannot allocate memory|std::bad_alloc|MemoryError/i
/**
 * V8 can also die on a failed check inside its heap when memory runs out under it (a page it cannot re-protect
 * during a collection: `# Check failed: reservation_.SetPermissions(…)`, exit 133), with a native stack through
 * the heap's code. Only a failure inside the heap counts; any other V8 crash stays an error.
 */
const V8_HEAP_FAILURE = /^# ?(Check failed: .*|Fatal process out of memory.*)$[\s\S]*v8::internal::(?:Heap|BackingStore|PagedSpace|MemoryAllocator)::/m

/** The stderr line that shows the interpreter ran out of memory, or undefined when nothing does. */
export function outOfMemoryEvidence(stderr: string): string | undefined {
  const line = stderr.split('\n').find((text) => OUT_OF_MEMORY.test(text))
  if (line !== undefined) return line.trim()
  const heap = V8_HEAP_FAILURE.exec(stderr)
  return heap ? `V8 failed inside its heap: ${heap[1]!.trim()}` : undefined
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
    return { status: 'timeout', error: { type: 'TimeoutError', message: run.spawnError ?? `execution passed the ${policy.wallTimeMs} ms time limit; the sandbox was killed` } }
  }
  if (run.stoppedFor === 'cancelled') return { status: 'cancelled', error: { type: 'Cancelled', message: 'the run was cancelled; the sandbox was killed' } }
  if (run.stoppedFor === 'output_limit') return { status: 'output_limit', error: { type: 'OutputLimit', message: `output passed the ${policy.outputBytes}-byte limit; the sandbox was killed` } }
  if (run.spawnError) return { status: 'unavailable', error: { type: 'SandboxUnavailable', message: `[execgate] [process] the sandbox could not start: ${run.spawnError}` } }

  const report = parseReport(run.report)
  if (report?.ok) return { status: 'ok', value: report.value }
  if (report?.error) {
    if (report.error.type === 'MemoryError') return { status: 'memory_limit', error: { ...report.error, message: `memory limit reached (${policy.memoryMb} MiB): ${report.error.message || 'MemoryError'}` } }
    if (report.error.type === 'PolicyViolation') return { status: 'policy_violation', error: report.error }
    return { status: 'error', error: report.error }
  }

  const code = run.exitCode
  const lastLine = stderr.trim().split('\n').pop() ?? ''
  if (code === 0) return { status: 'ok' }
  if (code === 1 && /^bwrap: /.test(stderr)) return { status: 'unavailable', error: { type: 'SandboxUnavailable', message: `[execgate] [process] bubblewrap refused to start the sandbox: ${lastLine}` } }
  if (code === LAUNCHER_FAILED) return { status: 'error', error: { type: 'WorkspaceError', message: `the workspace files could not be unpacked (they may exceed the workspace size): ${lastLine}` } }
  if (run.signal === 'SIGXCPU' || code === 128 + SIGXCPU) {
    return { status: 'timeout', error: { type: 'TimeoutError', message: `the code used its ${policy.cpuTimeMs} ms of CPU time and was stopped` } }
  }
  const outOfMemory = outOfMemoryEvidence(stderr)
  if (outOfMemory) return { status: 'memory_limit', error: { type: 'MemoryError', message: `memory limit reached (${policy.memoryMb} MiB): ${outOfMemory}` } }
  const how = code !== null && code > 128 ? `was killed by signal ${code - 128}` : `exited with code ${code ?? run.signal}`
  return { status: 'error', error: { type: 'ExitError', message: `the program ${how}${lastLine ? `: ${lastLine}` : ''}` } }
}

export function parseReport(text: string): { ok?: boolean; value?: unknown; error?: ExecutionErrorInfo } | undefined {
  if (!text) return undefined
  try {
    const parsed = JSON.parse(text) as { ok?: boolean; value?: unknown; error?: ExecutionErrorInfo }
    if (parsed.error && (typeof parsed.error.type !== 'string' || typeof parsed.error.message !== 'string')) return undefined
    return parsed
  } catch {
    return undefined // the code wrote to fd 5 itself; fall back to the exit code
  }
}
