import { performance } from 'node:perf_hooks'
import type { ExecutionContext } from '../core/adapter'
import type { ExecutionErrorInfo, ExecutionStatus } from '../core/types'
import { SharedDeadlines, type ArmedDeadline } from './shared-deadlines'

/** Why the host stops a run itself, whatever runs it. */
export type RunStopCause = 'timeout' | 'cancelled' | 'output_limit'

/** What a run's clock reads from its context: the deadline, the caller's cancellation, the service's clock. */
export type RunClockSource = Pick<ExecutionContext, 'deadline' | 'signal' | 'isAborted' | 'onAbort' | 'pauseClock' | 'restartClock'>

/** How the adapter stops its backend, given when the code starts. */
export interface RunStopHandlers {
  /**
   * Called once, with the first cause, when the run must stop: the deadline passed (plus `graceMs`), the caller
   * cancelled (after `graceMs`, once `onCancel` has asked the backend to stop on its own), or `stop()` was called.
   * Not called once the run has settled.
   */
  onStop(cause: RunStopCause): void
  /** Called at once when the caller cancels, before the grace period: a polite stop (a flag the backend polls). */
  onCancel?(): void
}

export interface RunControllerOptions {
  /**
   * How long past the deadline, or after a cancellation that `onCancel` announced, the backend may take to stop on
   * its own before `onStop` (a worker in native code polls its interrupt late). @default 0
   */
  graceMs?: number
}

/**
 * Every run's deadline in this thread, on one timer: a run almost always ends long before it, and a timer of its own
 * costs each run a Timeout armed and cleared, as the service's backstops did (see SharedDeadlines).
 */
const runDeadlines = new SharedDeadlines()

/**
 * The state machine every adapter's run needs, written once: the deadline timer, cancellation through the
 * context's AbortSignal, the output cap's stop, a clock paused while the run waits for backend capacity (a warm
 * interpreter, a uid, a container start) and restarted when the code starts, and settling exactly once, which
 * clears every timer and listener it armed. The adapter keeps what is its own: how to stop its backend, and what
 * its outcome looks like.
 */
export class RunController {
  private deadline: number
  private deadlineTimer: ArmedDeadline | undefined
  private graceTimer: NodeJS.Timeout | undefined
  private readonly intervals = new Set<NodeJS.Timeout>()
  private pausedAt: number | undefined
  private started = false
  private done = false
  private stopped = false
  private readonly graceMs: number
  private handlers: RunStopHandlers | undefined
  private stopListening: (() => void) | undefined
  private readonly onAbort = () => {
    if (this.done) return
    this.handlers?.onCancel?.()
    this.disarmDeadline()
    // Without a polite stop there is nothing to wait for: the backend cannot know of the cancel.
    if (this.graceMs === 0 || !this.handlers?.onCancel) this.stop('cancelled')
    else this.graceTimer = setTimeout(() => this.stop('cancelled'), this.graceMs)
  }

  constructor(
    private readonly context: RunClockSource,
    options: RunControllerOptions = {},
  ) {
    this.deadline = context.deadline
    this.graceMs = options.graceMs ?? 0
  }

  /**
   * The code starts: arms the deadline and the cancellation with the adapter's way to stop its backend. Before this
   * the controller is only a clock (paused while the run waits for capacity). A run cancelled before it starts
   * stops at once (after the grace).
   */
  start(handlers: RunStopHandlers): this {
    this.handlers = handlers
    if (this.context.isAborted?.() ?? this.context.signal.aborted) {
      this.onAbort()
      return this
    }
    // Through the context's own hook when it has one: the service makes the run's AbortSignal only when asked for it.
    if (this.context.onAbort) this.stopListening = this.context.onAbort(this.onAbort)
    else {
      const signal = this.context.signal
      signal.addEventListener('abort', this.onAbort, { once: true })
      this.stopListening = () => signal.removeEventListener('abort', this.onAbort)
    }
    this.armDeadline()
    return this
  }

  /** The deadline the code runs under, moved by any paused wait. */
  get currentDeadline(): number {
    return this.deadline
  }

  remainingMs(): number {
    return Math.max(0, this.deadline - performance.now())
  }

  get settled(): boolean {
    return this.done
  }

  /** The run waits for capacity that is not the code's time: the deadline timer stops and the service's clock pauses. */
  pauseClock(): void {
    if (this.pausedAt !== undefined || this.done) return
    this.pausedAt = performance.now()
    this.disarmDeadline()
    this.context.pauseClock?.()
  }

  /** The code starts: the deadline moves by the wait (the service's, when it keeps the clock) and is armed again. */
  restartClock(): number {
    if (this.pausedAt === undefined) return this.deadline
    const waited = performance.now() - this.pausedAt
    this.pausedAt = undefined
    this.deadline = this.context.restartClock?.() ?? this.deadline + waited
    if (!this.done && this.started) this.armDeadline()
    return this.deadline
  }

  /** Runs `tick` every `ms` until the run settles (a memory poll). */
  every(ms: number, tick: () => void): void {
    if (this.done) return
    this.intervals.add(setInterval(tick, ms))
  }

  /** Stops the run for `cause` (the output cap, say); the first cause wins and nothing stops a settled run. */
  stop(cause: RunStopCause): void {
    if (this.done || this.stopped) return
    this.stopped = true
    this.handlers?.onStop(cause)
  }

  /** Ends the run: returns true the first time only, and clears every timer and listener. */
  settle(): boolean {
    if (this.done) return false
    this.done = true
    this.disarmDeadline()
    clearTimeout(this.graceTimer)
    for (const interval of this.intervals) clearInterval(interval)
    this.intervals.clear()
    this.stopListening?.()
    return true
  }

  private armDeadline(): void {
    this.started = true
    this.disarmDeadline()
    if (this.pausedAt !== undefined) return
    this.deadlineTimer = runDeadlines.arm(this.remainingMs() + this.graceMs, this.onDeadline)
  }

  private readonly onDeadline = (): void => {
    this.deadlineTimer = undefined
    this.stop('timeout')
  }

  private disarmDeadline(): void {
    runDeadlines.disarm(this.deadlineTimer)
    this.deadlineTimer = undefined
  }
}

/** The status and error a stop is answered with, the same words on every adapter. */
export function stoppedOutcome(cause: RunStopCause, wallTimeMs: number): { status: ExecutionStatus; error: ExecutionErrorInfo } {
  if (cause === 'cancelled') return { status: 'cancelled', error: { type: 'Cancelled', message: 'the run was cancelled' } }
  if (cause === 'output_limit')
    return { status: 'output_limit', error: { type: 'OutputLimit', message: 'output passed the limit; the run was stopped' } }
  return { status: 'timeout', error: { type: 'TimeoutError', message: `execution passed the ${wallTimeMs} ms time limit` } }
}
