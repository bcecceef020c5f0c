import fs from 'node:fs'
import path from 'node:path'
import { Worker } from 'node:worker_threads'
import { ExecgateError, describeError } from '../../core'
import { startWorker } from '../../runtime/worker-script'
import type { Logger } from '../../observability/logger'
import type { LedgerItem, LedgerWriterPort } from './ledger-writer'
import type { RetentionPolicy, RetentionReport } from './retention'
import { encodeHandOver, type HandOver } from './writer-handover'
import type { WriterReply, WriterRequest, WriterThreadData } from './writer-protocol'

type Request = { resolve(value: unknown): void; reject(error: Error): void }

/**
 * The writer thread's module: compiled (dist/) it runs as it is. From sources (ts-jest, ts-node), loading TypeScript
 * in every new thread took 2–4 s on a busy machine, and most tests open a ledger; esbuild (a devDependency, present
 * wherever sources run) transpiles the few files the thread loads in milliseconds. Without it, ts-node as elsewhere.
 */
function startWriterThread(workerData: WriterThreadData): Worker {
  // The environment as this thread sees it now (the S3 SDK's credential chain reads it there).
  const options = { workerData, env: { ...process.env } }
  if (fs.existsSync(path.join(__dirname, 'writer-thread.js'))) return new Worker(path.join(__dirname, 'writer-thread.js'), options)
  try {
    require.resolve('esbuild')
  } catch {
    return startWorker(__dirname, 'writer-thread', options)
  }
  const source = path.join(__dirname, 'writer-thread.ts')
  const bootstrap = `const esbuild = require(${JSON.stringify(require.resolve('esbuild'))}); const fs = require('node:fs');
require.extensions['.ts'] = (module, filename) => module._compile(
  esbuild.transformSync(fs.readFileSync(filename, 'utf8'), { loader: 'ts', format: 'cjs', target: 'node20', sourcefile: filename }).code,
  filename,
);
require(${JSON.stringify(source)})`
  return new Worker(bootstrap, { ...options, eval: true })
}

/**
 * The ledger's writer in a worker thread (writer-thread.ts): hashing, blob writes and record appends happen there, so
 * a run's answer pays only for capturing its record and, once per batch, for posting it. The thread starts with the
 * first item and is unref'd while it has nothing to write, so an idle ledger never keeps a process alive; with items
 * on their way it is ref'd, so a process that ends without `dispose` still writes what it heard.
 *
 * The thread lowers its priority (`nice`, fabric.ledger.writerNice): on a machine with few cores, a quickjs run's two
 * threads woke to find the writer holding a core and waited for it, ~20 µs a run (benchmarks.md); lowered, they
 * preempt it. A lowered thread gets little of a machine busy on every core, and cannot raise itself back: one that
 * falls `behindAt` records behind hands its queue back (`handBack`) and a new thread, at the process's priority,
 * takes over; hand-overs and questions meanwhile wait, in order, for it.
 */
export class ThreadedLedgerWriter implements LedgerWriterPort {
  /**
   * Bounded hand-overs: the thread writes while runs go on, so a burst of runs that never yields (monty's inline runs)
   * leaves at most this many records to write when it ends, not a whole transaction's 500 (measured: with 500, a
   * loop of 1000 monty runs ending in a flush waited ~16 ms for its last batch). The thread still commits what has
   * gathered in its queue meanwhile as one transaction (up to 500). Not fewer: runs that yield (quickjs's, ~0.1 ms)
   * keep pace with the thread, so each hand-over was its own wake-up, message and commit; 64 cost a quickjs run
   * ~9–10 µs more CPU in all than 256 (bench ledger, median of 41 paired batches), monty's the same.
   */
  readonly handOverBatch = 256
  private worker: Worker | undefined
  private readonly requests = new Map<number, Request>()
  private nextId = 1
  /** Items sent to a thread (held ones are not, until they go). */
  private posted = 0
  /** Items the current thread wrote, plus everything settled by earlier threads (written or counted lost). */
  private settledBefore = 0
  private writtenHere = 0
  private closed = false
  /** The current thread has lowered its priority. */
  private lowered = false
  /** A thread is handing its queue back: what is sent meanwhile is held, in order, for the next one. */
  private handingBack = false
  private held: WriterRequest[] = []
  private heldItems = 0

  constructor(
    private readonly data: Omit<WriterThreadData, 'niceAtStart'>,
    private readonly options: { logger?: Logger; onLost?: (count: number) => void; behindAt?: number } = {},
  ) {}

  get written(): number {
    return this.settledBefore + this.writtenHere
  }

  /** The current thread, or a new one: lowered at once, or (taking over from one behind) once its queue is empty. */
  private thread(niceAtStart = true): Worker {
    if (this.worker) return this.worker
    const worker = startWriterThread({ ...this.data, niceAtStart })
    worker.on('message', (reply: WriterReply) => this.onReply(worker, reply))
    worker.on('error', (error) => this.options.logger?.error({ err: describeError(error) }, 'ledger writer thread failed'))
    worker.on('exit', (code) => this.onExit(worker, code))
    this.worker = worker
    this.writtenHere = 0
    this.lowered = false
    return worker
  }

  private onReply(worker: Worker, reply: WriterReply): void {
    if (worker !== this.worker) return
    switch (reply.op) {
      case 'written':
        this.writtenHere = reply.written
        return this.settle()
      case 'niced':
        this.lowered = true
        return
      case 'handedBack':
        return this.takeOver(worker, reply.handOver, reply.written)
      case 'log':
        return void this.options.logger?.[reply.level](reply.fields, reply.msg)
    }
    const request = this.requests.get(reply.id)
    if (!request) return
    this.requests.delete(reply.id)
    if (reply.op === 'done') request.resolve(reply.value)
    else request.reject(new ExecgateError('EXECGATE_LEDGER_UNAVAILABLE', { detail: reply.detail }))
    this.settle()
  }

  /** Idle (everything posted is written, no question pending): the thread no longer holds the process open. */
  private settle(): void {
    if (this.written >= this.posted && this.requests.size === 0 && !this.handingBack) this.worker?.unref()
  }

  /**
   * A lowered thread this far behind, with no question pending (a flush would resolve with the rest unwritten), is
   * asked to hand its queue back.
   */
  private checkBehind(): void {
    const behindAt = this.options.behindAt ?? 2000
    if (!this.lowered || this.handingBack || this.requests.size > 0 || this.posted - this.written < behindAt) return
    this.handingBack = true
    this.options.logger?.warn(
      { behind: this.posted - this.written, nice: this.data.nice },
      'the ledger writer fell behind at its lowered priority; a thread at the process priority takes over',
    )
    this.worker!.postMessage({ op: 'handBack' } satisfies WriterRequest)
  }

  /**
   * The old thread's unwritten items go first to a new thread, then what was held meanwhile. The new thread starts once
   * the old one has ended: a starved thread ending late still held the file's lock (a new writer's appends failed with
   * "database is locked" under a load on every core).
   */
  private takeOver(old: Worker, handOver: HandOver, written: number): void {
    this.settledBefore += written
    this.writtenHere = 0
    this.worker = undefined
    const start = () => {
      this.handingBack = false
      const worker = this.thread(false)
      worker.ref()
      if (handOver.runs.length > 0 || handOver.others?.length) worker.postMessage({ op: 'post', handOver } satisfies WriterRequest)
      this.sendHeld(worker)
    }
    old.terminate().then(start, start)
  }

  private sendHeld(worker: Worker): void {
    const held = this.held
    this.held = []
    this.posted += this.heldItems
    this.heldItems = 0
    for (const request of held) worker.postMessage(request)
  }

  private onExit(worker: Worker, code: number): void {
    if (this.worker !== worker) return
    this.worker = undefined
    const lost = this.posted - this.written
    this.settledBefore = this.posted
    this.writtenHere = 0
    if (!this.closed || lost > 0) {
      this.options.logger?.error(
        { exitCode: code, lost },
        'the ledger writer thread ended; records it had not written are lost (the next run starts a new one)',
      )
      if (lost > 0) this.options.onLost?.(lost)
    }
    // Questions held for the next thread are not the ended one's: they go on to it.
    const held = new Set(this.held.map((request) => ('id' in request ? request.id : undefined)))
    for (const [id, request] of this.requests) {
      if (held.has(id)) continue
      this.requests.delete(id)
      request.reject(new ExecgateError('EXECGATE_LEDGER_UNAVAILABLE', { detail: `the writer thread ended (exit code ${code})` }))
    }
    // Ended while handing back: what was held goes to a new thread.
    if (this.handingBack) {
      this.handingBack = false
      if (this.held.length > 0) this.sendHeld(this.thread(false))
    }
  }

  /** Sends a request to the thread, or holds it while a thread hands back. */
  private send(request: WriterRequest, items = 0): void {
    if (this.handingBack) {
      this.held.push(request)
      this.heldItems += items
      return
    }
    const worker = this.thread()
    worker.ref()
    this.posted += items
    worker.postMessage(request)
  }

  private ask<T>(request: WriterRequest & { id: number }): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.requests.set(request.id, { resolve: resolve as (value: unknown) => void, reject })
      this.send(request)
    })
  }

  post(items: readonly LedgerItem[]): void {
    if (items.length === 0) return
    this.send({ op: 'post', handOver: encodeHandOver(items) }, items.length)
    this.checkBehind()
  }

  async flush(): Promise<void> {
    if (!this.worker && !this.handingBack) return
    await this.ask<void>({ op: 'flush', id: this.nextId++ })
  }

  applyRetention(policy: RetentionPolicy, now?: number, tenants?: string[]): Promise<RetentionReport> {
    return this.ask<RetentionReport>({
      op: 'retention',
      id: this.nextId++,
      policy,
      ...(now !== undefined ? { now } : {}),
      ...(tenants ? { tenants } : {}),
    })
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (!this.worker && !this.handingBack) return
    try {
      await this.ask<void>({ op: 'close', id: this.nextId++ })
    } finally {
      await this.worker?.terminate()
    }
  }
}
