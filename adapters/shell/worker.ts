import { performance } from 'node:perf_hooks'
import { parentPort, workerData } from 'node:worker_threads'
import type { Bash as BashClass, InMemoryFs as InMemoryFsClass, defineCommand as defineCommandFn } from 'just-bash'
import { WorkerJobChannel, cancelRequested, settleHostCall, type ExecutionErrorInfo, type ExecutionStatus } from '../../src/core'
import { shellUtilities } from './commands'
import type { ShellJob, ToShellWorker } from './protocol'
import { SHELL_WORKSPACE, changedFiles, guardWorkspace, placeFiles } from './workspace-fs'

/**
 * A shell worker thread: runs one script at a time in just-bash over a fresh in-memory filesystem. just-bash says
 * it is not robust against denial of service from its input, so it runs here, where the main thread can kill it
 * at the deadline and V8's heap cap (resourceLimits) stops a memory bomb without touching the host.
 */

const port = parentPort!
const flags = new Int32Array(workerData.flags as SharedArrayBuffer)
const pendingHostCalls = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>()
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { Bash, InMemoryFs, defineCommand } = require('just-bash') as { Bash: typeof BashClass; InMemoryFs: typeof InMemoryFsClass; defineCommand: typeof defineCommandFn }

/**
 * `yes`, which just-bash lacks. Real `yes` runs until its reader closes the pipe; just-bash hands whole outputs
 * between commands, so this one stops after `limitBytes` (a quarter of the run's data limit): enough for
 * `yes | head -n 100000`, and an output flood still passes the output cap.
 */
function yesCommand(limitBytes: number) {
  return defineCommand('yes', async (args) => {
    const line = `${args.length > 0 ? args.join(' ') : 'y'}\n`
    return { stdout: line.repeat(Math.max(1, Math.floor(limitBytes / line.length))), stderr: '', exitCode: 0 }
  })
}

/** How often a running script looks at the cancel flag (the main thread kills it anyway after the grace). */
const CANCEL_POLL_MS = 10

async function run(job: ShellJob): Promise<void> {
  const started = performance.now()
  const channel = new WorkerJobChannel(port, job.id, job.outputBytes, pendingHostCalls)
  const memory = new InMemoryFs()
  const placed = await placeFiles(memory, job.filesystem === 'none' ? [] : job.files)
  // just-bash's own data limits sit below the heap cap so a big string or pipe fails with a clear message first;
  // the heap cap is what holds when they do not.
  const dataBytes = Math.floor(job.memoryBytes / 2)
  const bash = new Bash({
    fs: guardWorkspace(memory, job.filesystem),
    cwd: SHELL_WORKSPACE,
    env: { HOME: SHELL_WORKSPACE, PATH: '/usr/bin:/bin', LANG: 'C.UTF-8' },
    commands: shellUtilities() as never,
    customCommands: [yesCommand(Math.floor(dataBytes / 4))],
    executionLimits: {
      maxExecutionTimeMs: Math.max(1, Math.floor(job.remainingMs)),
      maxCallDepth: job.maxCallDepth,
      maxCommandCount: job.maxIterations,
      maxLoopIterations: job.maxIterations,
      maxAwkIterations: job.maxIterations,
      maxSedIterations: job.maxIterations,
      maxJqIterations: job.maxIterations,
      maxStringLength: dataBytes,
      maxHeredocSize: dataBytes,
      maxOutputSize: dataBytes,
      maxLiveBytes: dataBytes,
      maxInputBytes: dataBytes,
      maxFileSystemBytes: dataBytes,
    },
  })
  const abort = new AbortController()
  const deadline = setTimeout(() => abort.abort(), Math.max(0, job.remainingMs - (performance.now() - started)))
  const cancelPoll = setInterval(() => cancelRequested(flags) && abort.abort(), CANCEL_POLL_MS)
  try {
    const result = await bash.exec(job.script, { signal: abort.signal, ...(job.stdin !== undefined ? { stdin: job.stdin } : {}) })
    if (result.stdout) channel.write('stdout', result.stdout)
    if (result.stderr) channel.write('stderr', result.stderr)
    let outcome = abort.signal.aborted && result.exitCode !== 0 ? stopped(job, cancelRequested(flags)) : fromExit(job, result.exitCode, result.stderr)
    // A flood stopped by the clock or a data limit was stopped by its output first: say so, as a killed sandbox would.
    if ((outcome.status === 'timeout' || outcome.status === 'memory_limit') && channel.outputExceeded) {
      outcome = { status: 'output_limit', error: { type: 'OutputLimit', message: `output passed the ${job.outputBytes}-byte limit` } }
    }
    const files = job.filesystem === 'sandboxed' && outcome.status === 'ok' ? await changedFiles(memory, placed) : undefined
    channel.finish({ ...outcome, ...(files?.length ? { files } : {}) })
  } finally {
    clearTimeout(deadline)
    clearInterval(cancelPoll)
  }
}

function stopped(job: ShellJob, cancelled: boolean): { status: ExecutionStatus; error: ExecutionErrorInfo } {
  return cancelled
    ? { status: 'cancelled', error: { type: 'Cancelled', message: 'the run was cancelled' } }
    : { status: 'timeout', error: { type: 'TimeoutError', message: `execution passed the ${job.timeoutMs} ms time limit` } }
}

/**
 * just-bash reports its own limits only as text on stderr with exit 126 (124 for its deadline), so those
 * messages are read here to give each its status; every other non-zero exit is the script's own error.
 */
export function fromExit(job: Pick<ShellJob, 'timeoutMs' | 'memoryBytes'>, exitCode: number, stderr: string): { status: ExecutionStatus; error?: ExecutionErrorInfo } {
  if (exitCode === 0) return { status: 'ok' }
  const lastLine = stderr.trim().split('\n').pop() ?? ''
  if (exitCode === 124 && /execution deadline/.test(lastLine)) return stopped({ ...job, id: 0 } as ShellJob, false)
  if (exitCode === 126 && /output size (limit )?exceeded/.test(lastLine)) {
    return { status: 'memory_limit', error: { type: 'MemoryError', message: `memory limit reached (${job.memoryBytes / 1048576} MiB): ${lastLine}` } }
  }
  if (exitCode === 126 && /(string length|heredoc size|live bytes|input bytes|filesystem bytes|array elements|brace expansion).*(limit|exceeded)/i.test(lastLine)) {
    return { status: 'memory_limit', error: { type: 'MemoryError', message: `memory limit reached (${job.memoryBytes / 1048576} MiB): ${lastLine}` } }
  }
  return { status: 'error', error: { type: 'ExitError', message: `the script exited with code ${exitCode}${lastLine ? `: ${lastLine}` : ''}` } }
}

port.on('message', (message: ToShellWorker) => {
  if (message.type === 'hostResult') return settleHostCall(pendingHostCalls, message)
  run(message).catch((error: unknown) => {
    port.postMessage({ type: 'result', id: message.id, status: 'internal_error', error: { type: 'InternalError', message: String((error as Error)?.message ?? error) } })
  })
})
// Warm the interpreter once so the first request does not pay for just-bash's lazy command loading.
void new Bash({ fs: new InMemoryFs() })
  .exec('echo warm | wc -c >/dev/null')
  .finally(() => port.postMessage({ type: 'ready' }))
