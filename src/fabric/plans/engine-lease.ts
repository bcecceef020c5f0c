import { describeError } from '../../core'
import type { Logger } from '../../observability/logger'
import { defaultOwnerAlive } from '../tasks'
import type { PlanStore } from './plan-store'

/**
 * Whether the engine that owns a revision still runs. A plan left REVISING by a dead engine is taken over by another;
 * one whose owner lives is left to it, so the reflector is asked by one engine at a time. On a store several machines
 * share (Redis), each engine holds a lease there, as short as the driver lease (5 s by default) and renewed as often
 * (every tick): an owner whose lease ran out (a SIGKILL, a lost machine) is gone, wherever it ran, and its revision is
 * taken over about 5 s later rather than after `fabric.leaseMs`. A live engine paused past it costs one more question
 * to the reflector at worst: the revision's write is a compare-and-set, so one answer alone becomes the version.
 * On the embedded store the owner is judged by its pid on this host.
 */
export class EngineLease {
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly store: Pick<PlanStore, 'heartbeat' | 'release' | 'ownerAlive'>,
    private readonly owner: string,
    private readonly options: {
      /** How long the lease outlives its last renewal (ms). */
      ttlMs: number
      /** How often it is renewed (ms); at most a third of `ttlMs` is used. */
      renewMs: number
      ownerAlive?: (owner: string) => boolean | Promise<boolean>
      logger?: Logger
    },
  ) {}

  async start(): Promise<void> {
    const { store } = this
    if (!store.heartbeat || this.timer) return
    const { ttlMs, renewMs } = this.options
    const renew = () =>
      store.heartbeat!(this.owner, ttlMs).catch((error: unknown) =>
        this.options.logger?.warn({ err: describeError(error) }, 'the plan engine could not renew its lease'),
      )
    await renew()
    this.timer = setInterval(() => void renew(), Math.max(100, Math.min(renewMs, Math.floor(ttlMs / 3))))
    this.timer.unref()
  }

  /** Gives the lease back: what this engine was revising is another's to take over at once, not after the lease runs out. */
  async stop(): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    await this.store.release?.(this.owner).catch(() => undefined)
  }

  async alive(owner: string): Promise<boolean> {
    if (this.options.ownerAlive) return this.options.ownerAlive(owner)
    return this.store.ownerAlive ? this.store.ownerAlive(owner) : defaultOwnerAlive(owner)
  }
}
