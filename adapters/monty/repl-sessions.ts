import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import {
  OutputCapture,
  createResult,
  describeError,
  valueBytes,
  type ExecutionContext,
  type ExecutionErrorInfo,
  type ExecutionResult,
  type ExecutionStatus,
} from '../../src/core'
import { Pool, PooledChildProcess, RunController, SessionStore, stoppedOutcome, type SessionLimits } from '../../src/runtime'
import { mapMontyError } from './map-error'
import { toJsonValue } from './to-json'

/** What the REPL process answers for one call. */
interface FeedAnswer {
  type: 'result'
  id: number
  status: 'ok' | 'error' | 'internal_error'
  value?: unknown
  failure?: { exception: { typeName: string; message: string }; line?: number; column?: number; display?: string }
  /** False when the marker could not be printed (the REPL's time or memory was spent): stdout may hold back a line. */
  flushed: boolean
  state?: Uint8Array
}

/** repl-child.js ships beside the compiled adapter; from sources (tests) it is beside this file already. */
function childScript(): string {
  const here = path.join(__dirname, 'repl-child.js')
  if (fs.existsSync(here)) return here
  return path.resolve(__dirname, '..', '..', '..', 'adapters', 'monty', 'repl-child.js')
}

/** The REPL's child process: no host environment, a heap cap, stdout a pipe the adapter reads (monty prints there). */
class MontyReplProcess extends PooledChildProcess<FeedAnswer> {
  constructor(onExit: (process: MontyReplProcess, reason: string) => void) {
    super(
      { module: childScript(), execArgv: ['--max-old-space-size=256'], env: {}, stdout: 'pipe', loads: 'the monty REPL' },
      (member, reason) => onExit(member as MontyReplProcess, reason),
    )
  }

  protected exitReason(): string {
    const last = this.stderrTail.trim().split('\n').pop()
    return `the monty session process exited${last ? `: ${last}` : ''}`
  }
}

/**
 * monty sessions: the REPL's state as bytes (`MontyRepl.dump`) kept per session, loaded into a child process for
 * each call. The child is a pool of one process (the shared {@link Pool}), started on the first session call,
 * serving one call at a time in arrival order (a session's calls must not interleave); a call that overstays its
 * deadline, floods its output or is cancelled gets the process killed and replaced.
 */
export class MontyReplSessions {
  private readonly sessions: SessionStore<Uint8Array>
  private readonly pool = new Pool<MontyReplProcess>({
    size: 1,
    startNow: false,
    start: (onExit) => new MontyReplProcess(onExit),
    cannotStart: 'the session process cannot start',
    disposed: 'the monty adapter was disposed',
  })
  private nextId = 0

  constructor(
    sessions: SessionLimits | undefined,
    private readonly maxRecursionDepth: number,
    private readonly killGraceMs: number,
  ) {
    this.sessions = new SessionStore('monty', sessions)
  }

  run(sessionId: string, code: string, context: ExecutionContext): Promise<ExecutionResult> {
    const started = performance.now()
    const opened = this.sessions.openForCall(sessionId)
    if ('refusal' in opened) return Promise.resolve(opened.refusal)
    return this.feed(sessionId, code, opened.state, context, started)
  }

  private async feed(
    sessionId: string,
    code: string,
    state: Uint8Array | undefined,
    context: ExecutionContext,
    started: number,
  ): Promise<ExecutionResult> {
    let child: MontyReplProcess
    try {
      child = await this.pool.acquire()
    } catch (error) {
      this.sessions.keepAfterCall(sessionId, state, undefined)
      return createResult('unavailable', 'monty', { message: `[execgate] [monty] ${describeError(error)}` })
    }
    const id = ++this.nextId
    const marker = `execgate-end-${randomUUID()}`
    const output = new OutputCapture(context.policy.outputBytes, context.onOutput)
    const outcome = await new Promise<{ status: ExecutionStatus; answer?: FeedAnswer; error?: ExecutionErrorInfo }>((resolve) => {
      let pending = ''
      let markerSeen = false
      let answer: FeedAnswer | undefined
      // The REPL's monty stops itself at maxDurationSecs; past that by killGraceMs the process is killed.
      const run = new RunController(context, { graceMs: this.killGraceMs })
      const finish = (result: { status: ExecutionStatus; answer?: FeedAnswer; error?: ExecutionErrorInfo }, kill: boolean) => {
        if (!run.settle()) return
        child.child.stdout?.off('data', onData)
        if (kill) void this.pool.replace(child)
        else this.pool.release(child)
        resolve(result)
      }
      const stop = (status: ExecutionStatus, type: string, message: string) => finish({ status, error: { type, message } }, true)
      const complete = () => {
        if (answer && (markerSeen || !answer.flushed)) finish({ status: answer.status, answer }, !answer.flushed)
      }
      const onData = (chunk: Buffer) => {
        pending += chunk.toString('utf8')
        const end = pending.indexOf(`${marker}\n`)
        // Everything but a tail that could be the start of the marker goes out as it arrives.
        const upTo = end >= 0 ? end : Math.max(0, pending.length - marker.length - 1)
        if (upTo > 0 && !output.write('stdout', pending.slice(0, upTo))) return run.stop('output_limit')
        pending = pending.slice(upTo)
        if (end >= 0) {
          markerSeen = true
          complete()
        }
      }
      const onMessage = (message: FeedAnswer) => {
        if (message?.type !== 'result' || message.id !== id) return
        answer = message
        complete()
      }
      child.child.stdout?.on('data', onData)
      child.attach(onMessage, (reason) => stop('error', 'InterpreterExited', reason))
      run.start({ onStop: (cause) => finish(stoppedOutcome(cause, context.policy.wallTimeMs), true) })
      if (run.settled) return
      const limits = {
        maxDurationSecs: Math.max(0.001, (context.deadline - performance.now()) / 1000),
        maxMemory: context.policy.memoryMb * 2 ** 20,
        maxRecursionDepth: this.maxRecursionDepth,
      }
      child.send({ type: 'feed', id, code, marker, limits, ...(state ? { state } : {}) })
    })
    const answer = outcome.answer
    const kept = answer?.status === 'ok' ? answer.state : undefined
    const message = this.sessions.keepAfterCall(
      sessionId,
      state,
      kept === undefined ? undefined : { bytes: kept.byteLength, state: () => kept },
    )
    let status = outcome.status
    let error = outcome.error
    if (answer && answer.status !== 'ok') {
      const failure = answer.failure
      ;({ status, error } = mapMontyError({
        exception: failure?.exception,
        message: failure?.exception.message,
        traceback: () => [{ line: failure?.line, column: failure?.column }],
        display: () => failure?.display ?? '',
      }))
      if (answer.status === 'internal_error') status = 'internal_error'
    }
    const value = answer?.status === 'ok' ? toJsonValue(answer.value) : undefined
    const captured = output.finish(valueBytes(value))
    if (status === 'ok' && captured.truncated) status = 'output_limit'
    return createResult(status, 'monty', {
      ...captured,
      value: value === null ? undefined : value,
      error,
      ...(message ? { message } : {}),
      usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes },
    })
  }

  /** The session's REPL state (`MontyRepl.dump()` bytes) as its last call left it. */
  exportState(sessionId: string): Uint8Array | undefined {
    return this.sessions.peek(sessionId)
  }

  /** A session's state dumped by another process (another node's monty): the next call loads it. */
  importState(sessionId: string, state: Uint8Array): void {
    this.sessions.save(sessionId, state)
  }

  close(sessionId: string): boolean {
    return this.sessions.close(sessionId)
  }

  dispose(): Promise<void> {
    return this.pool.dispose()
  }
}
