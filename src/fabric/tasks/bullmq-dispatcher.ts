import type { Redis } from 'ioredis'
import { importOptional } from '../../core/optional-dependency'
import type { Task } from './task-types'

/**
 * How a store with many processes hands due tasks to whoever has a free slot. The embedded store needs none (each
 * process polls its file); the distributed one dispatches through BullMQ, so a task due on Redis reaches exactly one
 * idle worker at once, highest priority first, and a worker that dies mid-run (kill -9) loses its lock and the task
 * goes to another worker.
 */
export interface TaskDispatcher {
  /** Announces a task that is due now, or at `task.notBefore`. Extra announcements are harmless (claims are CAS). */
  dispatch(task: Task): Promise<void>
  /**
   * Optional: announces on the task store's own connection, which runs commands in the order sent, so this
   * announcement lands after a write of the store whose call was made before it (its answer not awaited). The
   * scheduler sends a new task's announcement right behind its insert with it. It may fail where `dispatch` would
   * wait (the store's connection gives up on a command sooner than the queue's): the caller then awaits the write
   * and announces again with `dispatch`.
   */
  dispatchBehindStoreWrites?(task: Task): Promise<void>
  /**
   * Starts taking announced tasks, `concurrency` at a time; `run` resolves when the task's run has settled. It is
   * given the task's attempt count when it was announced (undefined for an announcement made without one), so that a
   * stale announcement handed back late is not taken for the run a later one started; and `handedBack`: whether this
   * announcement was taken before, by a process that stopped renewing its lease (undefined when the dispatcher cannot
   * tell). Only such an announcement can say that a run in flight was lost: a second announcement of the same attempt
   * (a resume while the first still queued) finds the run the first one started, alive.
   */
  consume(run: (taskId: string, announcedAttempts?: number, handedBack?: boolean) => Promise<void>, concurrency: number): Promise<void>
  /** Stops taking announced tasks (runs in flight go on); used before a shutdown stops them. */
  pause(): Promise<void>
  close(): Promise<void>
}

export interface BullmqDispatcherOptions {
  /** `redis://host:port[/db]`. */
  url: string
  /** Queue name (and key prefix), so deployments can share a Redis. @default 'execgate-tasks' */
  queue?: string
  /**
   * A worker's lease on a run: it renews it every half of this while alive; one it stops renewing (a crash, a
   * kill -9) is taken back after this and runs on another worker. @default 30000
   */
  leaseMs?: number
  /**
   * The task store's open connection (left open by `close`), for `dispatchBehindStoreWrites`; without it the
   * dispatcher has no such method.
   */
  storeConnection?: Redis
}

/** BullMQ priorities run from 1 (first) to 2,097,151; ours from -1,000,000 to 1,000,000 with higher first. */
const PRIORITY_ORIGIN = 1_000_001

export function bullmqPriority(priority: number): number {
  return PRIORITY_ORIGIN - priority
}

type BullQueue = import('bullmq').Queue
type BullWorker = import('bullmq').Worker

export class BullmqDispatcher implements TaskDispatcher {
  private queue: Promise<BullQueue> | undefined
  /** The same queue on the task store's connection (dispatchBehindStoreWrites). */
  private behind: Promise<BullQueue> | undefined
  private workers: BullWorker[] = []
  private readonly name: string
  private readonly leaseMs: number

  readonly dispatchBehindStoreWrites?: (task: Task) => Promise<void>

  constructor(private readonly options: BullmqDispatcherOptions) {
    this.name = options.queue ?? 'execgate-tasks'
    this.leaseMs = options.leaseMs ?? 30_000
    const storeConnection = options.storeConnection
    if (storeConnection)
      this.dispatchBehindStoreWrites = async (task) => this.announce(await (this.behind ??= this.newQueue(storeConnection)), task)
  }

  private connection() {
    // BullMQ's blocking reads need `maxRetriesPerRequest: null`; each Queue and Worker opens its own connections.
    return { url: this.options.url, maxRetriesPerRequest: null }
  }

  private async newQueue(connection: Redis | ReturnType<BullmqDispatcher['connection']>): Promise<BullQueue> {
    // Loaded on first use, so the embedded default never loads BullMQ.
    const { Queue } = await importOptional('redis', () => import('bullmq'))
    return new Queue(this.name, { connection })
  }

  async dispatch(task: Task): Promise<void> {
    await this.announce(await (this.queue ??= this.newQueue(this.connection())), task)
  }

  private async announce(queue: BullQueue, task: Task): Promise<void> {
    const delay = Math.max(0, task.notBefore - Date.now())
    await queue.add(
      'task',
      { taskId: task.id, attempts: task.attempts },
      {
        priority: bullmqPriority(task.priority),
        ...(delay > 0 ? { delay } : {}),
        // The task store keeps the record; the queue only carries the announcement.
        removeOnComplete: true,
        removeOnFail: true,
      },
    )
  }

  async consume(
    run: (taskId: string, announcedAttempts?: number, handedBack?: boolean) => Promise<void>,
    concurrency: number,
  ): Promise<void> {
    const { Worker } = await importOptional('redis', () => import('bullmq'))
    const announced = (job: { data: unknown }) => job.data as { taskId: string; attempts?: number }
    // A job taken again: BullMQ moved it back from a worker whose lock lapsed (stalled), and starts it once more.
    const handedBack = (job: { stalledCounter: number; attemptsStarted: number }) => job.stalledCounter > 0 || job.attemptsStarted > 1
    // One BullMQ Worker per slot, each taking one job at a time. A Worker of concurrency N woken with a job by an
    // empty queue asks Redis for a second job before it starts the first (it fills its slots one round trip at a
    // time): a round trip more between each announcement and its run, on every step of a plan. A Worker of one slot
    // starts the job it took at once. The lease is BullMQ's as before: each Worker renews the locks of its own job.
    this.workers = Array.from(
      { length: Math.max(1, concurrency) },
      (_, index) =>
        new Worker(this.name, async (job) => run(announced(job).taskId, announced(job).attempts, handedBack(job)), {
          connection: this.connection(),
          concurrency: 1,
          lockDuration: this.leaseMs,
          stalledInterval: Math.max(500, Math.floor(this.leaseMs / 2)),
          // A task's own retry policy decides what a lost run means; BullMQ must keep handing the announcement back.
          maxStalledCount: 1_000,
          // The stalled check looks at the whole queue: one Worker of this process runs it.
          ...(index > 0 ? { skipStalledCheck: true } : {}),
        }),
    )
    await Promise.all(this.workers.map((worker) => worker.waitUntilReady()))
  }

  async pause(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.pause(true)))
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((worker) => worker.close()))
    await (await this.queue)?.close()
    await (await this.behind)?.close()
  }
}
