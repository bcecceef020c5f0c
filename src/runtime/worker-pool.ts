import type { Worker } from 'node:worker_threads'
import { Pool, type PoolMember, type PoolOptions } from './pool'
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
export class PooledWorker<FromWorker extends { type: string } = { type: string }, ToWorker = unknown> implements PoolMember {
  readonly flags = new Int32Array(new SharedArrayBuffer(4))
  readonly worker: WorkerHandle
  readonly ready: Promise<void>
  private listener: ((message: FromWorker) => void) | undefined
  private failure: ((reason: string, status?: 'memory_limit') => void) | undefined
  exited = false

  constructor(
    directory: string,
    name: string,
    label: string,
    onExit: (worker: PooledWorker<FromWorker, ToWorker>, reason: string) => void,
    kind: WorkerKind = { kind: 'thread' },
  ) {
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
        const reason =
          `the ${label} worker process passed its memory bound ` +
          `(${Math.round(this.worker.options.maxRssBytes / 2 ** 20)} MiB resident) and was stopped`
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

  get dead(): boolean {
    return this.exited
  }

  async kill(): Promise<void> {
    await this.worker.terminate()
  }
}

/**
 * QuickJS's and monty's workers: a {@link Pool} of {@link PooledWorker}s, threads or child processes, started at
 * creation (or, with `startNow` false, at the first `acquire` or `warmUp`: a one-shot command that never runs here
 * never pays for them).
 */
export class WorkerPool<FromWorker extends { type: string } = { type: string }, ToWorker = unknown> extends Pool<
  PooledWorker<FromWorker, ToWorker>
> {
  /**
   * @param directory folder of the worker module
   * @param name the worker module's file name without extension
   * @param label what the worker runs, for messages (`QuickJS`, `monty`)
   * @param startNow start the workers now rather than at the first `acquire` or `warmUp`
   */
  constructor(
    directory: string,
    name: string,
    label: string,
    size: number,
    startNow = true,
    kind: WorkerKind = { kind: 'thread' },
    take: PoolOptions<PooledWorker<FromWorker, ToWorker>>['take'] = 'longest-idle',
  ) {
    super({
      size,
      startNow,
      take,
      start: (onExit) => new PooledWorker<FromWorker, ToWorker>(directory, name, label, onExit, kind),
      cannotStart: `${label} workers cannot start`,
      disposed: `the ${label} pool was disposed`,
    })
  }
}
