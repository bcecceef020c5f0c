import type { Redis } from 'ioredis'
import { runScript, runScriptInOrder } from '../redis-script'
import { DEPENDENTS, INSERT, TRANSITION, UPDATE, applied } from './redis-task-scripts'
import type { StartHere, TaskChange, TaskListFilter, TaskPage, TaskStore, TransitionOf, TransitionSteps } from './task-store'
import { holdsFor } from './task-store'
import { isFinal, type Task, type TaskEvent, type TaskState } from './task-types'
import { compareDue } from './due-order'
import { RedisRunLeases } from './redis-run-leases'
import { TaskCopies } from './redis-task-copies'

/**
 * The distributed store: tasks on Redis, shared by `execgate serve` and any number of `execgate worker` processes.
 * Each task is one JSON string; a transition is a compare-and-set on that string (a Lua script: the write, the
 * state index and the action-log entry land together or not at all), so two processes can never both claim a task.
 *
 * Keys, under the prefix: `task:<id>` (JSON), `seq` and `eventSeq` (counters), `tenant:<t>` (zset of ids by seq,
 * for paging), `idempotency:<t>` (hash key -> id), `state:<S>` (set of ids), `dependents:<id>` (set),
 * `events:<id>` (list of JSON events), `deadlines` (zset of never-started PENDING tasks by start-by time). The insert
 * script builds key names from the prefix, so the store needs one Redis (not a Cluster), like BullMQ's queue.
 */

export interface RedisTaskStoreOptions {
  /** An ioredis connection this store may use (and closes on `close` when `ownsConnection`). */
  redis: Redis
  /** Key prefix, so several deployments can share one Redis. @default 'execgate:tasks' */
  prefix?: string
  ownsConnection?: boolean
  /**
   * The lease of a run started by this store's own write (startBehind): renewed every third of it, taken as lost by
   * any process once it lapsed (redis-run-leases.ts). Without it the store starts nothing behind its writes.
   */
  leaseMs?: number
}

/** How many times a compare-and-set is tried again after losing a race before the store says it lost. */
const CAS_ATTEMPTS = 20

function deadlineScore(task: Task): string {
  return task.state === 'PENDING' && task.attempts === 0 && task.deadline ? String(Date.parse(task.deadline)) : ''
}

export class RedisTaskStore implements TaskStore {
  private readonly redis: Redis
  private readonly prefix: string
  /** Tasks' JSON as this store last read or wrote them (redis-task-copies.ts). */
  private readonly copies = new TaskCopies()
  /** The leases of the runs started here behind a write (startBehind). */
  private readonly leases: RedisRunLeases | undefined

  constructor(private readonly options: RedisTaskStoreOptions) {
    this.redis = options.redis
    this.prefix = options.prefix ?? 'execgate:tasks'
    this.leases = options.leaseMs ? new RedisRunLeases(this.redis, this.key('leases'), options.leaseMs) : undefined
    if (!this.leases) this.startBehind = undefined
  }

  /** Set by the scheduler of this process (TaskStore.startHere): dependents an end makes ready may start here. */
  startHere?: StartHere

  /**
   * Announces a task on this store's connection (BullmqDispatcher.dispatchBehindStoreWrites, set by the Redis driver):
   * a completion's write makes the dependents it knows ready and announces them right behind itself.
   */
  announceBehind?: (task: Task) => Promise<void>

  /** The store's connection: commands sent on it after one of the store's writes run after that write. */
  get connection(): Redis {
    return this.redis
  }

  private key(...parts: string[]): string {
    return [this.prefix, ...parts].join(':')
  }

  private async read(id: string): Promise<{ raw: string; task: Task } | undefined> {
    const raw = this.copies.ended.get(id) ?? (await this.redis.get(this.key('task', id)))
    return raw ? this.parsed(raw) : undefined
  }

  /** The task of `raw`, remembered for the next compare-and-set while it is unfinished. */
  private parsed(raw: string): { raw: string; task: Task } {
    const task = JSON.parse(raw) as Task
    this.copies.remember(task, raw)
    return { raw, task }
  }

  /** The task as last seen here, if it is remembered: tried first, then read (`fresh`) when the store has moved on. */
  private async current(id: string, fresh: boolean): Promise<{ raw: string; task: Task } | undefined> {
    const raw = fresh ? undefined : this.copies.known.get(id)
    return raw ? { raw, task: JSON.parse(raw) as Task } : this.read(id)
  }

  async insert(tasks: readonly Task[], reason: string): Promise<Task[]> {
    if (tasks.length === 0) return []
    const args = tasks.flatMap((task) => {
      const event = JSON.stringify({ seq: 0, taskId: task.id, at: task.createdAt, from: null, to: task.state, reason, attempt: 0 })
      return [
        task.id,
        JSON.stringify(task),
        task.tenant,
        task.state,
        task.idempotencyKey ?? '',
        deadlineScore(task),
        // The event's seq comes from the script's counter, as in a transition.
        event.replaceAll('%', '%%').replace('{"seq":0,', '{"seq":%d,'),
        task.dependencies.join('\n'),
      ]
    })
    // EVAL, not runScript: the insert's command must be the one sent now, never an EVAL sent later after a NOSCRIPT,
    // since an announcement sent after it on this connection (dispatchBehindStoreWrites) must land after it.
    const answers = (await this.redis.eval(INSERT, 0, this.prefix, ...args)) as (string | number)[]
    tasks.forEach((task, index) => answers[index] === 1 && this.copies.remember(task, args[index * 8 + 1]!))
    // A task already stored under its idempotency key, or under its id (two nodes submitting one plan step), is the
    // one answered: nothing is stored twice.
    const existing = await this.getMany(answers.filter((answer): answer is string => typeof answer === 'string'))
    const byId = new Map(existing.map((task) => [task.id, task]))
    return tasks.map((task, index) => {
      const answer = answers[index]
      return typeof answer === 'string' ? (byId.get(answer) ?? task) : task
    })
  }

  async get(id: string): Promise<Task | undefined> {
    return (await this.read(id))?.task
  }

  async getMany(ids: readonly string[]): Promise<Task[]> {
    if (ids.length === 0) return []
    // Ended tasks known here are not read again (they cannot have changed); parsed anew, so no caller shares a copy.
    const unread = ids.filter((id) => !this.copies.ended.has(id))
    const raws = unread.length > 0 ? await this.redis.mget(unread.map((id) => this.key('task', id))) : []
    const read = new Map(unread.map((id, index) => [id, raws[index]]))
    return ids.flatMap((id) => {
      const raw = this.copies.ended.get(id) ?? read.get(id)
      return raw ? [this.parsed(raw).task] : []
    })
  }

  async list(filter: TaskListFilter): Promise<TaskPage> {
    const limit = Math.min(Math.max(filter.limit ?? 50, 1), 500)
    const matched: { seq: number; task: Task }[] = []
    const newest = filter.order === 'newest'
    let after = Number(filter.cursor ?? 0) || 0
    const key = this.key('tenant', filter.tenant)
    // Filters apply after reading, a batch of the tenant's tasks at a time, until the page is full.
    while (matched.length <= limit) {
      const batch = newest
        ? await this.redis.zrevrangebyscore(key, after ? `(${after}` : '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, 200)
        : await this.redis.zrangebyscore(key, `(${after}`, '+inf', 'WITHSCORES', 'LIMIT', 0, 200)
      if (batch.length === 0) break
      const ids = batch.filter((_, index) => index % 2 === 0)
      const seqs = batch.filter((_, index) => index % 2 === 1).map(Number)
      const tasks = await this.redis.mget(ids.map((id) => this.key('task', id)))
      tasks.forEach((raw, index) => {
        if (!raw) return
        const task = JSON.parse(raw) as Task
        if ((filter.state && task.state !== filter.state) || (filter.intentId && task.intentId !== filter.intentId)) return
        matched.push({ seq: seqs[index]!, task })
      })
      after = seqs[seqs.length - 1]!
    }
    const page = matched.slice(0, limit)
    return { tasks: page.map((entry) => entry.task), ...(matched.length > limit ? { nextCursor: String(page[page.length - 1]!.seq) } : {}) }
  }

  async transition(id: string, from: readonly TaskState[], change: TaskChange): Promise<TransitionOf | undefined> {
    const moved = await this.transitions(id, from, [change])
    return (
      moved && {
        task: moved.task,
        event: moved.steps[0]!.event,
        ...(moved.dependents ? { dependents: moved.dependents } : {}),
        ...(moved.announced ? { announced: moved.announced } : {}),
      }
    )
  }

  cached(id: string): Task | undefined {
    const raw = this.copies.known.get(id)
    return raw ? (JSON.parse(raw) as Task) : undefined
  }

  /** Several transitions in a row as one compare-and-set (a claim and its start), each with its action-log entry. */
  async transitions(id: string, from: readonly TaskState[], changes: readonly TaskChange[]): Promise<TransitionSteps | undefined> {
    let fresh = false
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const current = await this.current(id, fresh)
      // Checked on the task as known: the script below writes only if the stored task is still exactly that one.
      const holds = current && from.includes(current.task.state) && changes.every((change) => holdsFor(current.task, change))
      if (!holds) {
        // A remembered copy that fails the checks may be stale: only the stored task can say no.
        if (!fresh && this.copies.known.has(id)) {
          fresh = true
          continue
        }
        return undefined
      }
      const at = new Date().toISOString()
      const { task, steps, templates, raw } = applied(current.task, changes, at)
      // A task that ends here has its dependents read in the same script: the scheduler looks at them next. Those its
      // completion makes ready (as known here) are written ready first: their announcement needs no write of its own.
      const ends = isFinal(task.state)
      const readies = ends ? this.copies.readiedBy(task, at) : []
      const script = runScriptInOrder(
        this.redis,
        TRANSITION,
        ends ? 7 : 6,
        this.key('task', id),
        this.key('state', current.task.state),
        this.key('state', task.state),
        this.key('eventSeq'),
        this.key('events', id),
        this.key('deadlines'),
        ...(ends ? [this.key('dependents', id)] : []),
        current.raw,
        raw,
        deadlineScore(task),
        id,
        ...(ends ? [this.prefix, readies.length, ...readies.flatMap((one) => [one.id, one.expected, JSON.stringify(one.ready)])] : []),
        ...templates,
      )
      // Sent on this connection after the script: each lands after the write that made its task ready, so no write's
      // answer is waited for before the announcement (one made for a write that did not land is taken and dropped).
      // A dependent this process can run (startHere) is claimed and started there instead, with its lease: no
      // announcement, no take by a BullMQ worker, no claim of its own after the end's answer.
      const inputsOf = (ready: Task) =>
        ready.dependencies.map((dependency) => (dependency === id ? task : this.copies.endedTask(dependency)!))
      const starting = readies.map(({ ready }) => this.startHere?.(ready, inputsOf(ready), task))
      const announcing = readies.map(({ ready }, index) =>
        starting[index] || !this.announceBehind
          ? Promise.resolve(undefined)
          : this.announceBehind(ready).then(
              () => ready.id,
              () => undefined,
            ),
      )
      const [{ answer, inOrder }, announced, started] = await Promise.all([
        script,
        Promise.all(announcing),
        Promise.all(starting.map((start) => (start ?? Promise.resolve(undefined)).catch(() => undefined))),
      ])
      const [first, ...dependents] = answer as [number, ...(string | null)[]]
      if (first >= 0) {
        this.copies.remember(task, raw)
        if (ends) this.copies.waiting.delete(id)
        if (this.leases?.holds(id) && task.state !== 'SPAWNING' && task.state !== 'RUNNING') this.leases.release(id)
        const read = ends ? this.parsedAll(dependents) : undefined
        // The dependents started behind the end are known as their start wrote them (the end's script read them ready).
        for (const one of started) if (one) this.copies.remember(one.task, JSON.stringify(one.task))
        // Those the write made ready (a stale copy here announced one it did not), announced behind it: after a
        // NOSCRIPT the script ran after them, so they are announced again, as any dependent made ready. Those started
        // here need no announcement.
        const behind = read?.filter(
          (one) =>
            (one.ready && one.state === 'PENDING' && inOrder && announced.includes(one.id)) ||
            started.some((start) => start?.task.id === one.id),
        )
        return {
          task,
          steps: steps.map((step, index) => ({ task: step.task, event: { seq: first + index, ...step.event } })),
          ...(read ? { dependents: read } : {}),
          ...(behind?.length ? { announced: behind.map((one) => one.id) } : {}),
        }
      }
      // Lost to another write (or the copy was stale): read the task as stored.
      fresh = true
    }
    return undefined
  }

  /**
   * Claims and starts a task (its `changes`: the claim and the start) right behind a write of this store sent just
   * before, its answer not awaited, that leaves it stored exactly as `task` (an end's script making it ready); or, with
   * `makeReady`, writes it ready first over the copy known here, in the same send. The run's lease goes before the
   * compare-and-set, all at once on this connection: they land after that write, the lease before the claim. Undefined
   * when the task was not stored so (that write did not land, or another moved it): nothing started, the lease dropped.
   */
  startBehind?: (task: Task, changes: readonly TaskChange[], makeReady?: boolean) => Promise<TransitionSteps | undefined> = async (
    given,
    changes,
    makeReady,
  ) => {
    let expected = given
    let readied: Promise<unknown> | undefined
    if (makeReady) {
      const stored = this.copies.known.get(given.id)
      const copy = stored === undefined ? undefined : (JSON.parse(stored) as Task)
      if (!copy || copy.state !== 'PENDING' || copy.ready) return undefined
      expected = { ...copy, ready: true, updatedAt: new Date().toISOString() }
      // EVAL (a short script): never sent again after a NOSCRIPT, behind the claim that must land after it.
      readied = this.redis.eval(UPDATE, 1, this.key('task', given.id), stored!, JSON.stringify(expected))
      readied.catch(() => undefined)
    }
    if (!changes.every((change) => holdsFor(expected, change))) return undefined
    const id = expected.id
    const { task, steps, templates, raw } = applied(expected, changes, new Date().toISOString())
    if (!task.owner) return undefined
    this.leases!.take({ id, owner: task.owner, attempt: task.attempts })
    const written = runScript(
      this.redis,
      TRANSITION,
      6,
      this.key('task', id),
      this.key('state', expected.state),
      this.key('state', task.state),
      this.key('eventSeq'),
      this.key('events', id),
      this.key('deadlines'),
      JSON.stringify(expected),
      raw,
      deadlineScore(task),
      id,
      ...templates,
    )
    let first = -1
    try {
      ;[first] = (await written) as [number]
    } finally {
      if (first < 0) this.leases!.release(id)
    }
    if (first < 0) return undefined
    this.copies.remember(task, raw)
    return { task, steps: steps.map((step, index) => ({ task: step.task, event: { seq: first + index, ...step.event } })) }
  }

  /**
   * Runs started here or elsewhere behind a write (startBehind) whose lease lapsed, each taken by this call only, as
   * stored now and still held by that lease's holder: the scheduler settles them as lost.
   */
  async lapsedRuns(now: number): Promise<Task[]> {
    const holders = (await this.leases?.lapsed(now)) ?? []
    if (holders.length === 0) return []
    const raws = await this.redis.mget(holders.map((holder) => this.key('task', holder.id)))
    return raws.flatMap((raw, index) => {
      const task = raw ? (JSON.parse(raw) as Task) : undefined
      const holder = holders[index]!
      const held = task && (task.state === 'SPAWNING' || task.state === 'RUNNING')
      return held && task.owner === holder.owner && task.attempts === holder.attempt ? [this.parsed(raw!).task] : []
    })
  }

  async update(id: string, state: TaskState, patch: NonNullable<TaskChange['patch']>): Promise<Task | undefined> {
    let fresh = false
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const current = await this.current(id, fresh)
      if (!current || current.task.state !== state) {
        if (!fresh && this.copies.known.has(id)) {
          fresh = true
          continue
        }
        return undefined
      }
      const task = { ...current.task, ...patch, updatedAt: new Date().toISOString() }
      const raw = JSON.stringify(task)
      if ((await runScript(this.redis, UPDATE, 1, this.key('task', id), current.raw, raw)) === 1) {
        this.copies.remember(task, raw)
        return task
      }
      fresh = true
    }
    return undefined
  }

  async due(now: number, limit: number): Promise<Task[]> {
    const ready = (await this.inStates(['PENDING'])).filter((task) => task.ready && task.notBefore <= now)
    if (ready.length === 0) return []
    // Each task's submission number is its score in its tenant's index (one `seq` counter for every tenant).
    const pipeline = this.redis.pipeline()
    for (const task of ready) pipeline.zscore(this.key('tenant', task.tenant), task.id)
    const scores = (await pipeline.exec()) ?? []
    return ready
      .map((task, index) => ({ task, priority: task.priority, seq: Number(scores[index]?.[1] ?? Number.MAX_SAFE_INTEGER) }))
      .sort(compareDue)
      .slice(0, limit)
      .map((entry) => entry.task)
  }

  async expired(now: number): Promise<Task[]> {
    const ids = await this.redis.zrangebyscore(this.key('deadlines'), '-inf', `(${now}`)
    return (await this.getMany(ids)).filter((task) => task.state === 'PENDING' && task.attempts === 0)
  }

  async inStates(states: readonly TaskState[]): Promise<Task[]> {
    const ids = (await Promise.all(states.map((state) => this.redis.smembers(this.key('state', state))))).flat()
    return (await this.getMany(ids)).sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt))
  }

  async dependentsOf(id: string): Promise<Task[]> {
    return this.parsedAll((await runScript(this.redis, DEPENDENTS, 1, this.key('dependents', id), this.prefix)) as (string | null)[])
  }

  /** The tasks of the JSON found (a key without a task answers null), each remembered while unfinished. */
  private parsedAll(raws: readonly (string | null)[]): Task[] {
    return raws.filter((raw): raw is string => typeof raw === 'string').map((raw) => this.parsed(raw).task)
  }

  async events(id: string, afterSeq = 0): Promise<TaskEvent[]> {
    const raws = await this.redis.lrange(this.key('events', id), 0, -1)
    return raws.map((raw) => JSON.parse(raw) as TaskEvent).filter((event) => event.seq > afterSeq)
  }

  async close(): Promise<void> {
    this.leases?.stop()
    if (this.options.ownsConnection) await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
