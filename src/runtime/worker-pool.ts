import type { Worker } from 'node:worker_threads'
import { ProcessWorker } from './process-worker'
import { startWorker } from './worker-script'

/** Where a pool's workers run: threads of the host, or child processes with a memory bound (native interpreters). */
export type WorkerKind = { kind: 'thread' } | { kind: 'process'; maxRssBytes: number }

/** The calls a pool makes of a worker, whether a thread or a child process. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Listener = (...args: any[]) => void
type WorkerHandle = Pick<Worker, 'postMessage' | 'ref' | 'unref'> & {
  on(event: string, listener: Listener): unknown
  off(event: string, listener: Listener): unknown
  once(event: string, listener: Listener): unknown
  terminate(): Promise<number>
}

/** Index in a worker's shared flags that the main thread sets to ask the running job to stop. */
export const FLAG_CANCEL = 0

/**
 * A worker thread with a shared cancel flag, speaking a message protocol of its adapter's choosing. The worker
 * module must post `{ type: 'ready' }` once it can take jobs.
 */
export class PooledWorker<FromWorker extends { type: string } = { type: string }, ToWorker = unknown> {
  readonly flags = new Int32Array(new SharedArrayBuffer(4))
  readonly worker: WorkerHandle
  readonly ready: Promise<void>
  private listener: ((message: FromWorker) => void) | undefined
  private failure: ((reason: string, status?: 'memory_limit') => void) | undefined
  exited = false

  constructor(directory: string, name: string, label: string, onExit: (worker: PooledWorker<FromWorker, ToWorker>, reason: string) => void, kind: WorkerKind = { kind: 'thread' }) {
    // A child process cannot share the cancel flag: it is stopped by killing it past the grace instead.
    this.worker =
      kind.kind === 'process'
        ? new ProcessWorker(directory, name, { maxRssBytes: kind.maxRssBytes })
        : startWorker(directory, name, { workerData: { flags: this.flags.buffer }, stdout: false, stderr: false })
    this.worker.unref()
    this.ready = new Promise((resolve, reject) => {
      const onReady = (message: FromWorker) => {
        if (message.type !== 'ready') return
        this.worker.off('message', onReady)
        resolve()
      }
      this.worker.on('message', onReady)
      this.worker.once('exit', () => reject(new Error(`the ${label} worker exited while starting`)))
    })
    this.ready.catch(() => undefined)
    this.worker.on('message', (message: FromWorker) => this.listener?.(message))
    this.worker.on('error', (error) => this.failure?.(`the ${label} worker failed: ${error.message}`))
    this.worker.once('exit', (code: number) => {
      this.exited = true
      if (this.worker instanceof ProcessWorker && this.worker.memoryExceeded) {
        const reason = `the ${label} worker process passed its memory bound (${Math.round(this.worker.options.maxRssBytes / 2 ** 20)} MiB resident) and was stopped`
        this.failure?.(reason, 'memory_limit')
        onExit(this, reason)
        return
      }
      const reason = `the ${label} worker exited (code ${code})`
      this.failure?.(reason)
      onExit(this, reason)
    })
  }

  /** Routes the worker's messages to one job; `onFailure` fires if the worker dies mid-job. */
  attach(listener: (message: FromWorker) => void, onFailure: (reason: string, status?: 'memory_limit') => void): void {
    Atomics.store(this.flags, FLAG_CANCEL, 0)
    this.listener = listener
    this.failure = onFailure
    this.worker.ref()
  }

  detach(): void {
    this.listener = undefined
    this.failure = undefined
    this.worker.unref()
  }

  post(message: ToWorker): void {
    this.worker.postMessage(message)
  }

  cancel(): void {
    Atomics.store(this.flags, FLAG_CANCEL, 1)
  }
}

/**
 * A fixed-size pool of workers, started at creation (or, with `startNow` false, at the first `acquire` or
 * `warmUp`: a one-shot command that never runs here never pays for them) so no request pays for a cold start. A worker that is killed
 * (a run stuck past its deadline) or dies is replaced; requests wait in arrival order.
 */
export class WorkerPool<FromWorker extends { type: string } = { type: string }, ToWorker = unknown> {
  private readonly idle: PooledWorker<FromWorker, ToWorker>[] = []
  private readonly all = new Set<PooledWorker<FromWorker, ToWorker>>()
  private readonly waiting: { resolve: (worker: PooledWorker<FromWorker, ToWorker>) => void; reject: (error: Error) => void }[] = []
  private disposed = false
  /** Consecutive workers that died before becoming ready: the module cannot load here. */
  private startFailures = 0
  lastFailure: string | undefined
  private started = false

  /**
   * @param directory folder of the worker module
   * @param name the worker module's file name without extension
   * @param label what the worker runs, for messages (`QuickJS`, `monty`)
   * @param startNow start the workers now rather than at the first `acquire` or `warmUp`
   */
  constructor(
    private readonly directory: string,
    private readonly name: string,
    private readonly label: string,
    readonly size: number,
    startNow = true,
    private readonly kind: WorkerKind = { kind: 'thread' },
  ) {
    if (startNow) this.start()
  }

  private start(): void {
    if (this.started || this.disposed) return
    this.started = true
    for (let i = 0; i < this.size; i++) this.spawn()
  }

  get broken(): boolean {
    return this.startFailures >= 3
  }

  /** True when a worker is idle and ready: an acquire now would not wait for a worker to start. */
  get hasIdle(): boolean {
    return this.idle.length > 0
  }

  /**
   * Starts the workers if they have not started and resolves once every one has loaded its module (or failed), so
   * the first jobs neither wait for a worker nor share the CPU with one still starting (measured: the first run
   * after waiting for one worker of two took 74 ms, the second 13 ms). Rejects when none can start.
   */
  async warmUp(): Promise<void> {
    this.start()
    await Promise.allSettled([...this.all].map((worker) => worker.ready))
    if (this.idle.length > 0) return
    this.release(await this.acquire())
  }

  private spawn(): void {
    const pooled = new PooledWorker<FromWorker, ToWorker>(this.directory, this.name, this.label, (worker, reason) => this.onExit(worker, reason), this.kind)
    this.all.add(pooled)
    pooled.ready.then(
      () => {
        this.startFailures = 0
        this.release(pooled)
      },
      () => undefined,
    )
  }

  private onExit(worker: PooledWorker<FromWorker, ToWorker>, reason: string): void {
    const wasIdle = this.idle.indexOf(worker)
    if (wasIdle >= 0) this.idle.splice(wasIdle, 1)
    if (!this.all.delete(worker) || this.disposed) return
    this.lastFailure = reason
    worker.ready.then(
      () => undefined,
      () => {
        this.startFailures++
        if (this.broken) for (const waiter of this.waiting.splice(0)) waiter.reject(new Error(`${this.label} workers cannot start: ${reason}`))
      },
    )
    if (!this.broken) this.spawn()
  }

  async acquire(): Promise<PooledWorker<FromWorker, ToWorker>> {
    if (this.disposed) throw new Error(`the ${this.label} pool was disposed`)
    this.start()
    if (this.broken) throw new Error(`${this.label} workers cannot start: ${this.lastFailure ?? 'unknown reason'}`)
    return this.tryAcquire() ?? new Promise((resolve, reject) => this.waiting.push({ resolve, reject }))
  }

  /** An idle worker now, without waiting; undefined if none is idle. */
  tryAcquire(): PooledWorker<FromWorker, ToWorker> | undefined {
    if (this.broken) return undefined
    // Oldest idle first: the worker that just answered is still preparing its next runtime.
    return this.idle.shift()
  }

  release(worker: PooledWorker<FromWorker, ToWorker>): void {
    if (this.disposed || worker.exited) return
    worker.detach()
    const next = this.waiting.shift()
    if (next) next.resolve(worker)
    else this.idle.push(worker)
  }

  /** Kills a worker (its run is abandoned) and starts a replacement. */
  async replace(worker: PooledWorker<FromWorker, ToWorker>): Promise<void> {
    worker.detach()
    await worker.worker.terminate()
  }

  async dispose(): Promise<void> {
    this.disposed = true
    // A warm-up or run still waiting for a worker must not wait forever.
    for (const waiter of this.waiting.splice(0)) waiter.reject(new Error(`the ${this.label} pool was disposed`))
    const workers = [...this.all]
    this.all.clear()
    this.idle.length = 0
    await Promise.all(workers.map((pooled) => pooled.worker.terminate()))
  }
}
