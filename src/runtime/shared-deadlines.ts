import { performance } from 'node:perf_hooks'

const MAX_TIMER_MS = 2 ** 31 - 1

/** One armed deadline: `fire` is called once when it passes, unless it is disarmed first. */
export interface ArmedDeadline {
  /** When it passes, on `performance.now()`'s clock. */
  readonly at: number
  readonly fire: () => void
}

/**
 * Many deadlines on one timer, for runs that almost always end long before theirs: a timer of its own for each run
 * costs Node a Timeout, its timer list and a libuv call to arm it and another to clear it (~1 µs, most of a trivial
 * monty run's overhead after the run itself), while a deadline here is an object in a Set. The one timer is set for
 * the earliest deadline armed while it was not set, and stays set when that deadline is disarmed: when it fires it
 * calls the deadlines that passed and is set again for the earliest one left. So a deadline fires no earlier than
 * its time and at most a timer's granularity (1 ms) after it, like a timer of its own; the timer keeps the process
 * alive only while a deadline is armed.
 */
export class SharedDeadlines {
  private readonly armed = new Set<ArmedDeadline>()
  private timer: NodeJS.Timeout | undefined
  /** When the timer fires, on `performance.now()`'s clock; infinite when it is not set. */
  private wakeAt = Number.POSITIVE_INFINITY

  /** Calls `fire` in `delayMs`, unless `disarm` is called with the answer first. */
  arm(delayMs: number, fire: () => void): ArmedDeadline {
    // As setTimeout takes them: a delay that is not a number (a context with no deadline) or not finite passes at once.
    const delay = Number.isFinite(delayMs) ? delayMs : 0
    const deadline: ArmedDeadline = { at: performance.now() + delay, fire }
    this.armed.add(deadline)
    if (deadline.at < this.wakeAt) this.setTimer(deadline.at, delay)
    else if (this.armed.size === 1) this.timer!.ref()
    return deadline
  }

  /** Forgets `deadline` (nothing when it fired or was disarmed already). */
  disarm(deadline: ArmedDeadline | undefined): void {
    if (!deadline || !this.armed.delete(deadline)) return
    // The timer stays set for the next deadline to reuse; with nothing armed it must not hold the process open.
    if (this.armed.size === 0) this.timer?.unref()
  }

  /** How many deadlines are armed (tests, metrics). */
  get size(): number {
    return this.armed.size
  }

  private setTimer(at: number, delayMs: number): void {
    clearTimeout(this.timer)
    this.wakeAt = at
    // Whole milliseconds, rounded up: a timer that fires a fraction early would find nothing due and be set again.
    // Node's longest timer is 2^31 - 1 ms (~24.8 days; longer ones fire at once): a later deadline is checked then.
    this.timer = setTimeout(this.check, Math.min(MAX_TIMER_MS, Math.max(1, Math.ceil(delayMs))))
  }

  private readonly check = (): void => {
    this.timer = undefined
    this.wakeAt = Number.POSITIVE_INFINITY
    const now = performance.now()
    const due: ArmedDeadline[] = []
    let next = Number.POSITIVE_INFINITY
    for (const deadline of this.armed) {
      if (deadline.at <= now) due.push(deadline)
      else if (deadline.at < next) next = deadline.at
    }
    for (const deadline of due) this.armed.delete(deadline)
    // Earliest first, as their own timers would have fired, when a busy event loop finds several passed at once.
    if (due.length > 1) due.sort((a, b) => a.at - b.at)
    // Set again before the calls: a deadline armed by one of them finds the timer as it should be.
    if (next !== Number.POSITIVE_INFINITY) this.setTimer(next, next - now)
    for (const deadline of due) {
      try {
        deadline.fire()
      } catch (error) {
        // One deadline's failure must not keep the others from firing; it surfaces as an uncaught error would.
        queueMicrotask(() => {
          throw error
        })
      }
    }
  }
}
