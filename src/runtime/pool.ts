/**
 * One member of a {@link Pool}: a worker thread or a warm child process that loads an interpreter once and then
 * takes runs one at a time.
 */
export interface PoolMember {
  /** Resolves once the member can take runs; rejects if it fails to load or exits first. */
  readonly ready: Promise<void>
  /** True once the member has exited (killed, crashed or ended). */
  readonly dead: boolean
  /** Forgets the run it served (its listeners) and stops holding the host's event loop. */
  detach(): void
  /** Kills the member; resolves once it is gone. */
  kill(): Promise<void>
}

export interface PoolOptions<Member extends PoolMember> {
  /** How many members the pool keeps. */
  size: number
  /**
   * Starts one member. It calls `onExit` once when it exits, whatever the cause, with the reason in words.
   */
  start: (onExit: (member: Member, reason: string) => void) => Member
  /** Start the members now rather than at the first `acquire` or warm-up (a command that never runs never pays). */
  startNow?: boolean
  /**
   * Asynchronous work done once, at the first start, before any member starts (pyodide's bubblewrap probe): kept out
   * of the constructor so building an adapter does no process work. A rejection breaks the pool with its message.
   */
  prepare?: () => Promise<void>
  /** The words before the reason when no member can start: `QuickJS workers cannot start`. */
  cannotStart: string
  /** The error a waiting or later `acquire` gets once the pool is disposed. */
  disposed: string
  /**
   * Which idle member a run takes: the one idle longest (the default: the member that just answered may still be
   * preparing for its next run), or the one that answered last (quickjs: back to back, one worker then takes every
   * run and the others stay idle, no hop to a thread that has to be woken; measured in docs/benchmarks.md).
   */
  take?: 'longest-idle' | 'last-released'
}

/** No member became free within the wait a caller allowed (`acquire(maxWaitMs)`). */
export class PoolWaitTimeout extends Error {
  constructor(readonly waitedMs: number) {
    super(`no member was free within ${Math.round(waitedMs)} ms`)
    this.name = 'PoolWaitTimeout'
  }
}

/** Consecutive members that failed before becoming ready: the module or interpreter cannot load here. */
const BROKEN_AFTER = 3

/**
 * The one pool of warm workers every adapter that needs one uses (QuickJS and monty's workers, pyodide's and the
 * shell's child processes): a fixed number of members started once, so no request pays for a cold start; requests
 * wait in arrival order; a member that is killed (a run stuck past its deadline, a memory bound) or dies is
 * replaced; after three members in a row fail to start the pool is `broken` and says why.
 */
export class Pool<Member extends PoolMember> {
  private readonly idle: Member[] = []
  private readonly all = new Set<Member>()
  private readonly waiting: { resolve: (member: Member) => void; reject: (error: Error) => void }[] = []
  private disposed = false
  private started = false
  private loadedOnce = false
  private startFailures = 0
  private prepared: Promise<void> | undefined
  lastFailure: string | undefined
  readonly size: number

  constructor(private readonly options: PoolOptions<Member>) {
    this.size = options.size
    if (options.startNow ?? true) this.start()
  }

  /** Starts the members, once (a no-op after the first call or after `dispose`). */
  start(): void {
    if (this.started || this.disposed) return
    this.started = true
    const spawnAll = () => {
      if (!this.disposed) for (let i = 0; i < this.size; i++) this.spawn()
    }
    if (!this.options.prepare) return spawnAll()
    this.prepared = this.options.prepare().then(spawnAll, (error: Error) => {
      this.startFailures = BROKEN_AFTER
      this.lastFailure = error.message
      for (const waiter of this.waiting.splice(0)) waiter.reject(this.cannotStart())
    })
  }

  get broken(): boolean {
    return this.startFailures >= BROKEN_AFTER
  }

  /** True when a member is idle and ready: an acquire now would not wait for one to start. */
  get hasIdle(): boolean {
    return this.idle.length > 0
  }

  private spawn(): void {
    const member = this.options.start((gone, reason) => this.onExit(gone, reason))
    this.all.add(member)
    member.ready.then(
      () => {
        this.loadedOnce = true
        this.startFailures = 0
        this.release(member)
      },
      (error: Error) => {
        this.startFailures++
        this.lastFailure = error.message
        if (this.broken) for (const waiter of this.waiting.splice(0)) waiter.reject(this.cannotStart())
      },
    )
  }

  private onExit(member: Member, reason: string): void {
    const idleAt = this.idle.indexOf(member)
    if (idleAt >= 0) this.idle.splice(idleAt, 1)
    if (!this.all.delete(member) || this.disposed) return
    this.lastFailure = reason
    // Decided once the member's start has settled (and a failed start has been counted): a pool whose members cannot
    // load stops replacing them.
    const replace = () => {
      if (!this.disposed && !this.broken) this.spawn()
    }
    member.ready.then(replace, replace)
  }

  private cannotStart(): Error {
    return new Error(`${this.options.cannotStart}: ${this.lastFailure ?? 'unknown reason'}`)
  }

  /**
   * An idle member, or the next to become idle. `maxWaitMs` bounds the wait (a run's own deadline): past it the
   * promise rejects with PoolWaitTimeout and the caller is no longer in line; so it is once `signal` aborts (the
   * promise rejects with the signal's reason).
   */
  async acquire(maxWaitMs = Number.POSITIVE_INFINITY, signal?: AbortSignal): Promise<Member> {
    if (this.disposed) throw new Error(this.options.disposed)
    this.start()
    if (this.broken) throw this.cannotStart()
    const idle = this.tryAcquire()
    if (idle) return idle
    const cancelled = () => (signal?.reason instanceof Error ? signal.reason : new Error('the wait for a member was cancelled'))
    if (signal?.aborted) throw cancelled()
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined
      const leave = (error: Error) => {
        const at = this.waiting.indexOf(waiter)
        if (at >= 0) this.waiting.splice(at, 1)
        done()
        reject(error)
      }
      const onAbort = () => leave(cancelled())
      const done = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
      }
      const waiter = {
        resolve: (member: Member) => (done(), resolve(member)),
        reject: (error: Error) => (done(), reject(error)),
      }
      if (Number.isFinite(maxWaitMs)) timer = setTimeout(() => leave(new PoolWaitTimeout(maxWaitMs)), maxWaitMs)
      signal?.addEventListener('abort', onAbort, { once: true })
      this.waiting.push(waiter)
    })
  }

  /** The members have been started (by a warm-up or by a first `acquire`). */
  get hasStarted(): boolean {
    return this.started
  }

  /** No member has become ready yet: the pool is warming up (or has not started). */
  get warming(): boolean {
    return !this.loadedOnce
  }

  /** An idle member now, without waiting; undefined if none is idle. */
  tryAcquire(): Member | undefined {
    if (this.broken) return undefined
    // Oldest idle first unless the pool says otherwise (PoolOptions.take).
    return this.options.take === 'last-released' ? this.idle.pop() : this.idle.shift()
  }

  /** Gives a member back after a run that left it clean; the next waiter gets it. */
  release(member: Member): void {
    member.detach()
    if (this.disposed || member.dead || !this.all.has(member)) return
    const next = this.waiting.shift()
    if (next) next.resolve(member)
    else this.idle.push(member)
  }

  /** Kills a member (its run is abandoned or it is no longer clean); its replacement starts at once. */
  async replace(member: Member): Promise<void> {
    const known = this.all.delete(member)
    const idleAt = this.idle.indexOf(member)
    if (idleAt >= 0) this.idle.splice(idleAt, 1)
    member.detach()
    if (known && !this.disposed && !this.broken) this.spawn()
    await member.kill()
  }

  /** Starts the pool if it has not started and resolves once one member is ready; rejects when none can be. */
  async warmOne(): Promise<void> {
    if (this.idle.length > 0) return
    this.release(await this.acquire())
  }

  /** Starts the pool if it has not started and resolves once every member has loaded or failed to. */
  async settled(): Promise<void> {
    this.start()
    await this.prepared
    await Promise.allSettled([...this.all].map((member) => member.ready))
  }

  /**
   * Both: every member loaded (or failed), so the first runs neither wait for a member nor share the CPU with one
   * still starting (measured on QuickJS: the first run after waiting for one worker of two took 74 ms, the second
   * 13 ms), and at least one ready; rejects when none can start.
   */
  async warmUp(): Promise<void> {
    await this.settled()
    await this.warmOne()
  }

  async dispose(): Promise<void> {
    this.disposed = true
    // A warm-up or run still waiting for a member must not wait forever.
    for (const waiter of this.waiting.splice(0)) waiter.reject(new Error(this.options.disposed))
    const members = [...this.all]
    this.all.clear()
    this.idle.length = 0
    await Promise.all(members.map((member) => member.kill()))
  }
}
