import {
  ExecgateError,
  isFatalHostError,
  pythonExceptionFor,
  describeError,
  type OutputCapture,
  type OutputCollector,
  type ExecutionContext,
  type ExecutionErrorInfo,
  type ExecutionStatus,
} from '../../src/core'
import { callHostFunction, stoppedOutcome, type RunController } from '../../src/runtime'
import type { ChildMessage, PyodideProcess, PyodideProcessPool } from './process-pool'

/** Longest the post-run restore (child-guard.js) may take before the process is replaced instead. */
const POST_RUN_CHECK_MS = 2000

/** What one run on a pool process came to, before the adapter makes it a result. */
export type RunOutcome = {
  status: ExecutionStatus
  value?: unknown
  error?: ExecutionErrorInfo
  memoryBytes?: number
  session?: string
  message?: string
  outputsOmitted?: number
}

/** One run's job for the child, and what the adapter watches it with. */
export interface RunJob {
  id: number
  code: string
  session?: { state: string }
  context: ExecutionContext
  run: RunController
  output: OutputCapture
  outputs: OutputCollector
  memoryPollMs: number
  /** Called when the child has answered and its post-run check begins, with a promise of that check's end. */
  onChecking?: (checked: Promise<void>) => void
}

/**
 * Runs `job` on `pyodideProcess` and resolves with its outcome as soon as the child answers. The process stays the
 * run's until the child's post-run verdict is in (then it goes back to the pool with its memory put back, or is
 * replaced if the run reached JavaScript, grew its memory or past the memory limit, or the verdict took over
 * POST_RUN_CHECK_MS).
 */
export function runOnProcess(pool: PyodideProcessPool, pyodideProcess: PyodideProcess, job: RunJob): Promise<RunOutcome> {
  const { id, context, run, output, outputs } = job
  const memoryLimit = context.policy.memoryMb * 1024 * 1024
  // Read when the process's last check came in (it has been idle since), so a warm run reads /proc once before it answers.
  const baseline = pyodideProcess.idleRssBytes ?? pyodideProcess.rssBytes() ?? 0
  return new Promise((resolve) => {
    let settled = false
    let answered: RunOutcome | undefined
    let checkTimer: NodeJS.Timeout | undefined
    let endCheck: (() => void) | undefined
    /** The caller gets the result now; the process is kept busy until its post-run check arrives. */
    const answer = (outcome: RunOutcome) => {
      if (answered || settled) return
      answered = outcome
      run.settle()
      if (job.onChecking) job.onChecking(new Promise<void>((resolve) => (endCheck = resolve)))
      // A verdict that never comes (a child stuck after its answer) must not hold the process forever.
      checkTimer = setTimeout(() => finish(outcome, false), POST_RUN_CHECK_MS)
      resolve(outcome)
    }
    const finish = (outcome: RunOutcome, keep: boolean) => {
      if (settled) return
      settled = true
      clearTimeout(checkTimer)
      run.settle()
      if (keep) pool.release(pyodideProcess)
      else void pool.replace(pyodideProcess)
      endCheck?.()
      if (!answered) resolve(outcome)
    }
    const stop = (status: ExecutionStatus, type: string, message: string, code?: string) => {
      if (answered) return finish(answered, false) // the process died during its post-run check: replace it
      finish({ status, error: { type, message, ...(code ? { code } : {}) } }, false)
    }
    run.every(job.memoryPollMs, () => {
      const grown = (pyodideProcess.rssBytes() ?? 0) - baseline
      if (grown > memoryLimit)
        stop(
          'memory_limit',
          'MemoryError',
          `memory limit reached: the interpreter grew by ${Math.round(grown / 2 ** 20)} MiB (limit ${context.policy.memoryMb} MiB)`,
        )
    })
    pyodideProcess.attach(
      (message: ChildMessage) => {
        if (message.type === 'output' && message.id === id) {
          for (const [stream, text] of message.chunks) {
            if (!output.write(stream, text)) return run.stop('output_limit')
          }
        } else if (message.type === 'display' && message.id === id) {
          if (!answered) outputs.add(parseItem(message.item))
        } else if (message.type === 'hostCall' && message.id === id) {
          answerHostCall(pyodideProcess, context, message, (error) =>
            stop('policy_violation', 'PolicyViolation', describeError(error), error.code),
          )
        } else if (message.type === 'result' && message.id === id) {
          if (message.status === 'ok')
            answer({
              status: 'ok',
              value: message.value,
              session: message.session,
              memoryBytes: Math.max(0, (pyodideProcess.rssBytes() ?? 0) - baseline),
              ...(message.outputsOmitted ? { outputsOmitted: message.outputsOmitted } : {}),
            })
          else answer(mapPythonError(message.error))
        } else if (message.type === 'checked' && message.id === id) {
          // A process that grew past the limit or had a module changed under it does not serve the next run.
          const resident = pyodideProcess.rssBytes() ?? 0
          const keep = !message.recycle && resident - baseline <= memoryLimit
          pyodideProcess.idleRssBytes = keep ? resident : undefined
          const early = { type: 'InternalError', message: 'the check came before the result' }
          finish(answered ?? { status: 'internal_error', error: early }, keep)
        }
      },
      // The code itself made the interpreter's process die (the permission model's refusal, an abort): that is
      // the code's doing, reported as a refusal or an error rather than a backend failure.
      (reason) => {
        if (reason.startsWith('the sandbox refused')) stop('policy_violation', 'PermissionDenied', reason)
        else stop('error', 'InterpreterExited', reason)
      },
    )
    run.start({
      onStop: (cause) => {
        const { status, error } = stoppedOutcome(cause, context.policy.wallTimeMs)
        stop(status, error.type, error.message)
      },
    })
    if (run.settled) return
    pyodideProcess.runs++
    const hostFunctions = (context.hostFunctions?.list() ?? []).map((spec) => spec.name)
    const { maxOutputs, outputsBytes, outputBytes } = context.policy
    pyodideProcess.child.send({
      type: 'run',
      id,
      code: job.code,
      hostFunctions,
      outputs: [maxOutputs, outputsBytes, outputBytes],
      ...(job.session ? { session: job.session } : {}),
    })
  })
}

/**
 * Runs one host call for the child blocked on it. A refusal that ends the run (budget, filesystem access) is not
 * answered: the run stops with policy_violation and the process, still blocked, is killed.
 */
function answerHostCall(
  pyodideProcess: PyodideProcess,
  context: ExecutionContext,
  message: { name: string; args: string },
  endRun: (error: ExecgateError) => void,
): void {
  let args: unknown
  try {
    args = JSON.parse(message.args)
  } catch {
    args = undefined
  }
  const call = Array.isArray(args)
    ? callHostFunction(context, message.name, args)
    : Promise.reject(new ExecgateError('EXECGATE_HOST_CALL_ARGS', { name: message.name, detail: 'the arguments must be a JSON list' }))
  call.then(
    (value) => pyodideProcess.reply({ ok: true, value: value ?? null }),
    (error: unknown) => {
      if (isFatalHostError(error)) return endRun(error)
      pyodideProcess.reply({ ok: false, exception: pythonExceptionFor(error), message: describeError(error) })
    },
  )
}

function mapPythonError(error: ExecutionErrorInfo | undefined): { status: ExecutionStatus; error: ExecutionErrorInfo } {
  const info = error ?? { type: 'Error', message: 'the run failed without an error message' }
  if (info.type === 'MemoryError')
    return { status: 'memory_limit', error: { ...info, message: `memory limit reached: ${info.message || 'MemoryError'}` } }
  return { status: 'error', error: info }
}

/**
 * A display() item's JSON text as the child sent it; anything that does not parse reaches the collector as undefined
 * (dropped, counted). */
function parseItem(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
