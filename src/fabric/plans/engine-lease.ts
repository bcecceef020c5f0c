import { describeError } from '../../core'
import type { Logger } from '../../observability/logger'
import { defaultOwnerAlive } from '../tasks'
import type { PlanStore } from './plan-store'

/**
 * Whether the engine that owns a revision still runs. A plan left REVISING by a dead engine is taken over by another;
 * one whose owner lives is left to it, so the reflector is asked by one engine at a time. On a store several machines
 * share (Redis), each engine holds a lease there, renewed every third of `leaseMs`: an owner whose lease ran out (a
 * SIGKILL, a lost machine) is gone, wherever it ran. On the embedded store the owner is judged by its pid on this host.
 */
export class EngineLease {
  private timer: NodeJS.Timeout | undefined

  constructor(
    private readonly store: Pick<PlanStore, 'heartbeat' | 'release' | 'ownerAlive'>,
    private readonly owner: string,
    private readonly options: { leaseMs?: number; ownerAlive?: (owner: string) => boolean | Promise<boolean>; logger?: Logger },
  ) {}

  async start(): Promise<void> {
    const { store } = this
    if (!store.heartbeat || this.timer) return
    const leaseMs = this.options.leaseMs ?? 30_000
    const renew = () =>
      store.heartbeat!(this.owner, leaseMs).catch((error: unknown) =>
        this.options.logger?.warn({ err: describeError(error) }, 'the plan engine could not renew its lease'),
      )
    await renew()
    this.timer = setInterval(() => void renew(), Math.max(100, Math.floor(leaseMs / 3)))
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
