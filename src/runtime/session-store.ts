import { ExecgateError, describeError, isExecgateError } from '../core/errors'
import { createResult } from '../core/result'
import type { ExecutionResult } from '../core/types'

/** How long sessions live and how many an adapter keeps. */
export interface SessionLimits {
  /** Idle time after which a session is dropped. @default 600 s (config `sessions.ttlSeconds`) */
  ttlSeconds: number
  /** Sessions kept at once. @default 32 (config `sessions.maxSessions`) */
  maxSessions: number
}

export const DEFAULT_SESSION_LIMITS: Readonly<SessionLimits> = Object.freeze({ ttlSeconds: 600, maxSessions: 32 })

/** Session state larger than this is not kept (the call still succeeds, and says so). */
export const MAX_SESSION_STATE_BYTES = 1024 * 1024

/** How many expired ids are remembered, so a caller hears "expired" once instead of silently starting over. */
const REMEMBERED_EXPIRED = 1000

/**
 * Session state an adapter keeps between calls, by session id: idle sessions expire after the TTL, the count is
 * capped, and a call on an expired session is told so (once) rather than quietly getting an empty one.
 */
export class SessionStore<State> {
  private readonly live = new Map<string, { state: State; lastUsed: number }>()
  private readonly expired = new Set<string>()

  constructor(
    private readonly adapter: string,
    private readonly limits: SessionLimits = DEFAULT_SESSION_LIMITS,
  ) {}

  /**
   * The session's state (undefined for a new session), or throws `EXECGATE_SESSION_UNKNOWN` for one that expired
   * and `EXECGATE_SESSION_LIMIT` when a new one would pass the cap.
   */
  open(id: string): State | undefined {
    this.sweep()
    const held = this.live.get(id)
    if (held) {
      held.lastUsed = Date.now()
      return held.state
    }
    if (this.expired.delete(id)) {
      throw new ExecgateError('EXECGATE_SESSION_UNKNOWN', {
        id,
        adapter: this.adapter,
        detail: `it expired after ${this.limits.ttlSeconds} s idle and its state is gone; the next call with this id starts a new session`,
      })
    }
    if (this.live.size >= this.limits.maxSessions)
      throw new ExecgateError('EXECGATE_SESSION_LIMIT', { adapter: this.adapter, limit: this.limits.maxSessions })
    return undefined
  }

  /**
   * `open` for an adapter's execute: the session's state (undefined for a new one), or the result refusing the
   * call — `invalid_request` for an expired session, `unavailable` past the cap.
   */
  openForCall(id: string): { state: State | undefined } | { refusal: ExecutionResult } {
    try {
      return { state: this.open(id) }
    } catch (error) {
      const status = isExecgateError(error, 'EXECGATE_SESSION_LIMIT') ? 'unavailable' : 'invalid_request'
      return {
        refusal: createResult(status, this.adapter, {
          message: describeError(error).replace('[execgate]', `[execgate] [${this.adapter}]`),
        }),
      }
    }
  }

  /**
   * After a call: keeps `next` (the state a successful call left), or `previous` when the call failed or `next` is
   * over MAX_SESSION_STATE_BYTES; returns the message for the result in that last case. `next.state` is read only
   * when it is kept (parsing a state that is dropped would be wasted work).
   */
  keepAfterCall(id: string, previous: State | undefined, next: { bytes: number; state: () => State } | undefined): string | undefined {
    const tooLarge = next !== undefined && next.bytes > MAX_SESSION_STATE_BYTES
    const kept = next && !tooLarge ? next.state() : previous
    if (kept !== undefined) this.save(id, kept)
    return tooLarge
      ? `[execgate] [${this.adapter}] the session's state passed ${MAX_SESSION_STATE_BYTES} bytes ` +
          `and was not kept; the previous state stays`
      : undefined
  }

  /** The session's state without touching its idle clock or the cap (what the fabric saves for other nodes). */
  peek(id: string): State | undefined {
    return this.live.get(id)?.state
  }

  save(id: string, state: State): void {
    this.live.set(id, { state, lastUsed: Date.now() })
  }

  close(id: string): boolean {
    return this.live.delete(id)
  }

  get size(): number {
    return this.live.size
  }

  clear(): void {
    this.live.clear()
    this.expired.clear()
  }

  private sweep(): void {
    const cutoff = Date.now() - this.limits.ttlSeconds * 1000
    for (const [id, held] of this.live) {
      if (held.lastUsed >= cutoff) continue
      this.live.delete(id)
      this.expired.add(id)
      if (this.expired.size > REMEMBERED_EXPIRED) this.expired.delete(this.expired.values().next().value!)
    }
  }
}
