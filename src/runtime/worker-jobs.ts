import { performance } from 'node:perf_hooks'
import type { MessagePort } from 'node:worker_threads'
import type { ExecutionContext, OutputStream } from '../core/adapter'
import { ExecgateError, describeError } from '../core/errors'
import { valueBytes, type OutputCapture } from '../core/output'
import { createResult } from '../core/result'
import type { OutputCollector } from '../core/rich-outputs'
import { RunController, stoppedOutcome } from './run-controller'
import type { ExecutionErrorInfo, ExecutionResult, ExecutionStatus } from '../core/types'
import { FLAG_CANCEL, type PooledWorker, type WorkerPool } from './worker-pool'

/**
 * The job protocol shared by adapters that run code in worker threads (quickjs, monty): the main thread posts a
 * job, the worker streams output in batches, asks for host calls, and answers with a result. The main thread
 * kills a worker that overstays its deadline or ignores a cancellation; the pool replaces it.
 */

export interface JobOutputMessage {
  type: 'output'
  id: number
  /** Each chunk, and how many bytes of it were left out in the worker (only the ends of a huge write cross). */
  chunks: [OutputStream, string, number?][]
}

/** A rich output (a `display()` item) the moment the code makes it; the host checks it (OutputCollector). */
export interface JobRichOutputMessage {
  type: 'richOutput'
  id: number
  output: unknown
}

export interface JobHostCallMessage {
  type: 'hostCall'
  id: number
  callId: number
  name: string
  args: unknown[]
}

export interface JobResultMessage {
  type: 'result'
  id: number
  status: ExecutionStatus
  value?: unknown
  error?: ExecutionErrorInfo
  hostCalls?: number
  /** Rich outputs the worker left out for the policy's limits (the items it kept were sent as they were made). */
  outputsOmitted?: number
  /** The session's state after the run, serialised by the worker, for adapters that keep sessions. */
  session?: string
  /**
   * The worker grew past its memory bound during the run (WebAssembly memory never shrinks, and a dropped module
   * is not collected soon enough): the pool replaces it after this job instead of reusing it.
   */
  retire?: boolean
}

export type JobMessage = { type: 'ready' } | JobOutputMessage | JobRichOutputMessage | JobHostCallMessage | JobResultMessage

export interface HostResultMessage {
  type: 'hostResult'
  callId: number
  ok: boolean
  value?: unknown
  error?: { code?: string; message: string }
}

export type JobOutcome = Pick<JobResultMessage, 'status' | 'value' | 'error' | 'hostCalls' | 'session' | 'outputsOmitted'> & {
  message?: string
}

export interface RunJobOptions {
  /** What the worker runs, for messages. */
  label: string
  /** How long past the deadline (or a cancellation) the worker may take before it is killed. */
  killGraceMs: number
  /** Receives the rich outputs the worker sends while the code runs. */
  outputs?: OutputCollector
}

/** Runs one job on a worker from the pool and settles with its outcome; never rejects. */
export async function runWorkerJob<ToWorker extends { id: number }>(
  pool: WorkerPool<JobMessage, ToWorker | HostResultMessage>,
  job: ToWorker,
  context: ExecutionContext,
  output: OutputCapture,
  options: RunJobOptions,
): Promise<JobOutcome> {
  let worker = pool.tryAcquire()
  if (!worker) {
    // Admission gives an adapter no more runs than it has workers, so a wait here is a worker starting (the first
    // run of a cold pool, the replacement of one killed at a limit): seconds on a loaded machine, which count in the
    // duration but not in the code's time limit, as pyodide's wait for an interpreter does.
    context.pauseClock?.()
    const pausedAt = performance.now()
    const waited = await waitForWorker(pool, context, options)
    const deadline = context.restartClock?.() ?? context.deadline + (performance.now() - pausedAt)
    if ('status' in waited) return waited
    worker = waited.worker
    context = { ...context, deadline }
  }
  return new Promise((resolve) => {
    const finish = (outcome: JobOutcome, reusable: boolean) => {
      if (!run.settle()) return
      if (reusable) pool.release(worker)
      else void pool.replace(worker)
      resolve(outcome)
    }
    // The worker polls its cancel flag and its own deadline; past either by killGraceMs it is killed and replaced.
    const run = new RunController(context, { graceMs: options.killGraceMs })
    worker.attach(
      (message) => {
        if (message.type === 'output') for (const [stream, text, omitted] of message.chunks) output.write(stream, text, omitted)
        else if (message.type === 'richOutput') options.outputs?.add(message.output)
        else if (message.type === 'hostCall') answerHostCall(worker, context, message)
        else if (message.type === 'result')
          finish(
            {
              status: message.status,
              value: message.value,
              error: message.error,
              hostCalls: message.hostCalls,
              session: message.session,
              outputsOmitted: message.outputsOmitted,
            },
            !message.retire,
          )
      },
      (reason, status) =>
        finish(
          status === 'memory_limit'
            ? { status, error: { type: 'MemoryError', message: `memory limit reached: ${reason}` } }
            : {
                status: 'internal_error',
                error: { type: 'InternalError', message: reason },
                message: `[execgate] [${options.label}] ${reason}`,
              },
          false,
        ),
    )
    run.start({
      onCancel: () => worker.cancel(),
      onStop: (cause) => finish(stoppedOutcome(cause, context.policy.wallTimeMs), false),
    })
    if (!run.settled && !(context.isAborted?.() ?? context.signal.aborted)) worker.post(job)
  })
}

/** How long a run waits for a worker to start before it is answered `unavailable`. */
export const WORKER_START_BOUND_MS = 60_000

/** Waits for a free worker, at most WORKER_START_BOUND_MS (a start that long is a broken pool, not a slow one). */
async function waitForWorker<ToWorker>(
  pool: WorkerPool<JobMessage, ToWorker | HostResultMessage>,
  context: ExecutionContext,
  options: RunJobOptions,
): Promise<{ worker: PooledWorker<JobMessage, ToWorker | HostResultMessage> } | JobOutcome> {
  const acquired = pool.acquire()
  let waitTimer: NodeJS.Timeout | undefined
  const late = new Promise<'late'>((resolve) => {
    waitTimer = setTimeout(() => resolve('late'), WORKER_START_BOUND_MS)
  })
  try {
    const first = await Promise.race([acquired, late])
    if (first !== 'late') return { worker: first }
    acquired.then(
      (lateWorker) => pool.release(lateWorker),
      () => undefined,
    )
    return {
      status: 'unavailable',
      message: `[execgate] [${options.label}] no worker started within ${WORKER_START_BOUND_MS} ms`,
      error: { type: 'Unavailable', message: `no ${options.label} worker started within ${WORKER_START_BOUND_MS} ms` },
    }
  } catch (error) {
    return { status: 'unavailable', message: `[execgate] [${options.label}] ${describeError(error)}` }
  } finally {
    clearTimeout(waitTimer)
  }
}

/** A host call from sandboxed code, through the run's host functions; a run without any refuses every name. */
export function callHostFunction(context: ExecutionContext, name: string, args: unknown[]): Promise<unknown> {
  return context.hostFunctions
    ? context.hostFunctions.call(name, args)
    : Promise.reject(new ExecgateError('EXECGATE_HOST_CALL_UNKNOWN', { name }))
}

function answerHostCall<ToWorker>(
  worker: PooledWorker<JobMessage, ToWorker | HostResultMessage>,
  context: ExecutionContext,
  message: JobHostCallMessage,
): void {
  callHostFunction(context, message.name, message.args).then(
    (value) => worker.post({ type: 'hostResult', callId: message.callId, ok: true, value }),
    (error: { code?: string }) =>
      worker.post({ type: 'hostResult', callId: message.callId, ok: false, error: { code: error?.code, message: describeError(error) } }),
  )
}

// Output is sent in batches: one message per print would dominate small floods.
const FLUSH_BYTES = 1024

/** The worker side of one job: batched output with the cap counted as it is written, and host calls. */
export class WorkerJobChannel {
  private batch: [OutputStream, string, number?][] = []
  private batchBytes = 0
  private written = 0
  private static nextCallId = 0
  hostCalls = 0

  constructor(
    private readonly port: Pick<MessagePort, 'postMessage'>,
    private readonly id: number,
    private readonly outputBytes: number,
    private readonly pending: Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>,
  ) {}

  /** Records output; returns false once the cap is passed, so the interpreter can stop. */
  write(stream: OutputStream, text: string, omittedBytes = 0): boolean {
    // Only a head and a tail of output past the cap is ever kept: a 100 MB print crosses to the host as its ends.
    const sent = text.length > 2 * this.outputBytes ? text.slice(0, this.outputBytes) + text.slice(-this.outputBytes) : text
    const omitted = omittedBytes + (sent === text ? 0 : Buffer.byteLength(text) - Buffer.byteLength(sent))
    this.batch.push(omitted ? [stream, sent, omitted] : [stream, sent])
    const size = Buffer.byteLength(sent) + omitted
    this.batchBytes += size
    this.written += size
    if (this.batchBytes >= FLUSH_BYTES) this.flush()
    return this.written <= this.outputBytes
  }

  get outputExceeded(): boolean {
    return this.written > this.outputBytes
  }

  flush(): void {
    if (this.batch.length === 0) return
    this.port.postMessage({ type: 'output', id: this.id, chunks: this.batch } satisfies JobOutputMessage)
    this.batch = []
    this.batchBytes = 0
  }

  /** Sends a rich output now, after the text written before it (so a streaming caller sees them in order). */
  display(output: unknown): void {
    this.flush()
    this.port.postMessage({ type: 'richOutput', id: this.id, output } satisfies JobRichOutputMessage)
  }

  /** Asks the main thread to run a host function; rejects with an error carrying the registry `code`. */
  callHost(name: string, args: unknown[]): Promise<unknown> {
    this.flush()
    this.hostCalls++
    const callId = ++WorkerJobChannel.nextCallId
    this.port.postMessage({ type: 'hostCall', id: this.id, callId, name, args } satisfies JobHostCallMessage)
    return new Promise((resolve, reject) => this.pending.set(callId, { resolve, reject }))
  }

  finish(result: Omit<JobResultMessage, 'type' | 'id'>): void {
    this.flush()
    this.port.postMessage({ type: 'result', id: this.id, ...result } satisfies JobResultMessage)
  }
}

/** Settles a pending host call in the worker from the main thread's answer. */
export function settleHostCall(
  pending: Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>,
  message: HostResultMessage,
): void {
  const waiter = pending.get(message.callId)
  pending.delete(message.callId)
  if (!waiter) return
  if (message.ok) waiter.resolve(message.value)
  else waiter.reject(Object.assign(new Error(message.error?.message ?? 'host call failed'), { code: message.error?.code }))
}

/** True when the main thread asked the running job to stop. */
export function cancelRequested(flags: Int32Array): boolean {
  return Atomics.load(flags, FLAG_CANCEL) === 1
}

/** The ExecutionResult for a finished worker job: output cut to the cap (the value counted in it), usage filled. */
export function resultFromJob(adapter: string, outcome: JobOutcome, output: OutputCapture, started: number): ExecutionResult {
  const captured = output.finish(valueBytes(outcome.value))
  const status = outcome.status === 'ok' && captured.truncated ? 'output_limit' : outcome.status
  // Not `{ ...captured, value, … }`: on Node 20 properties after a leading spread cost ~0.5 µs each (see monty's runInline).
  return createResult(status, adapter, {
    stdout: captured.stdout,
    stderr: captured.stderr,
    truncated: captured.truncated,
    stdoutBytes: captured.stdoutBytes,
    stderrBytes: captured.stderrBytes,
    value: outcome.value,
    error: outcome.error,
    message: outcome.message,
    usage: {
      wallMs: performance.now() - started,
      outputBytes: output.totalBytes,
      ...(outcome.hostCalls ? { hostCalls: outcome.hostCalls } : {}),
    },
  })
}

/**
 * A context for an adapter's own work (availability probes, parsing), independent of any caller's policy: no
 * network, files, imports or host calls, and the given time and memory.
 */
export function internalContext(traceId: string, wallTimeMs: number, memoryMb: number): ExecutionContext {
  return {
    traceId,
    policy: {
      wallTimeMs,
      cpuTimeMs: wallTimeMs,
      memoryMb,
      outputBytes: 1024,
      network: 'none',
      filesystem: 'none',
      allowedImports: [],
      hostCalls: { maxCount: 0, maxTotalMs: 0 },
      maxProcesses: 1,
      maxOutputs: 0,
      outputsBytes: 0,
      required: [],
    },
    signal: new AbortController().signal,
    deadline: performance.now() + wallTimeMs,
  }
}
