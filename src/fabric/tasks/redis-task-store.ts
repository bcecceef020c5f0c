import type { Redis } from 'ioredis'
import { runScript, runScriptInOrder } from '../redis-script'
import { DEPENDENTS, INSERT, TRANSITION, UPDATE } from './redis-task-scripts'
import type { TaskChange, TaskListFilter, TaskPage, TaskStore, TransitionOf, TransitionSteps } from './task-store'
import { holdsFor } from './task-store'
import { isFinal, type Task, type TaskEvent, type TaskState } from './task-types'
import { compareDue } from './due-order'

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
}

/** How many times a compare-and-set is tried again after losing a race before the store says it lost. */
const CAS_ATTEMPTS = 20

/** How many tasks' JSON the store keeps as it last read or wrote them (unfinished tasks only: they move again). */
const KNOWN_TASKS = 1024

/** How much ended tasks' JSON the store keeps (characters, all together), and the most for one task. */
const ENDED_CHARS = 4_000_000
const ENDED_CHARS_EACH = 64_000

function deadlineScore(task: Task): string {
  return task.state === 'PENDING' && task.attempts === 0 && task.deadline ? String(Date.parse(task.deadline)) : ''
}

export class RedisTaskStore implements TaskStore {
  private readonly redis: Redis
  private readonly prefix: string
  /**
   * Each unfinished task's JSON as this store last read or wrote it. A compare-and-set is tried on it first, without
   * a read: the script compares it with what is stored, so a stale copy (another process moved the task) only costs
   * the read it would have made anyway, and a write lands only on exactly the task it was checked against.
   */
  private readonly known = new Map<string, string>()
  /**
   * Ended tasks' JSON as this store read or wrote them. An ended task never changes again, so a read of one is
   * answered from here: a dependency's outputs read by its dependent's claim, the steps of a plan its engine looks at.
   */
  private readonly ended = new Map<string, string>()
  private endedChars = 0
  /**
   * Unfinished tasks known here not ready yet, by each dependency they wait on: what that dependency's end may make
   * ready in its own script (readiedBy), checked there against the copy it was made from.
   */
  private readonly waiting = new Map<string, Set<string>>()

  constructor(private readonly options: RedisTaskStoreOptions) {
    this.redis = options.redis
    this.prefix = options.prefix ?? 'execgate:tasks'
  }

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
    const raw = this.ended.get(id) ?? (await this.redis.get(this.key('task', id)))
    return raw ? this.parsed(raw) : undefined
  }

  /** The task of `raw`, remembered for the next compare-and-set while it is unfinished. */
  private parsed(raw: string): { raw: string; task: Task } {
    const task = JSON.parse(raw) as Task
    this.remember(task, raw)
    return { raw, task }
  }

  private remember(task: Task, raw: string): void {
    this.known.delete(task.id)
    if (isFinal(task.state)) return this.keepEnded(task.id, raw)
    this.known.set(task.id, raw)
    // Oldest first out: a Map iterates in insertion order.
    if (this.known.size > KNOWN_TASKS) this.known.delete(this.known.keys().next().value!)
    if (task.ready || task.state !== 'PENDING') return
    for (const dependency of task.dependencies) {
      const dependents = this.waiting.get(dependency) ?? new Set<string>()
      this.waiting.set(dependency, dependents.add(task.id))
      if (this.waiting.size > KNOWN_TASKS) this.waiting.delete(this.waiting.keys().next().value!)
    }
  }

  /**
   * The dependents that `task` completing makes ready, as known here: pending, not ready, of its tenant, every other
   * dependency known ended COMPLETED (for its tenant). Each with the JSON it is known by and its JSON ready (as
   * `update` writes it): the end's script writes the second only over the first, so a dependent moved meanwhile is
   * left to the scheduler's usual look at it (TaskTransitions.afterEnd), as is any dependent not known here.
   */
  private readiedBy(task: Task, at: string): { id: string; expected: string; ready: Task }[] {
    if (task.state !== 'COMPLETED') return []
    const completed = (id: string, tenant: string) => {
      const raw = id === task.id ? undefined : this.ended.get(id)
      const ended = raw === undefined ? undefined : (JSON.parse(raw) as Task)
      return id === task.id || (ended?.state === 'COMPLETED' && ended.tenant === tenant)
    }
    return [...(this.waiting.get(task.id) ?? [])].flatMap((id) => {
      const raw = this.known.get(id)
      const dependent = raw === undefined ? undefined : (JSON.parse(raw) as Task)
      if (!dependent || dependent.state !== 'PENDING' || dependent.ready || dependent.tenant !== task.tenant) return []
      if (!dependent.dependencies.includes(task.id) || !dependent.dependencies.every((dependency) => completed(dependency, task.tenant)))
        return []
      return [{ id, expected: raw!, ready: { ...dependent, ready: true, updatedAt: at } }]
    })
  }

  private keepEnded(id: string, raw: string): void {
    if (raw.length > ENDED_CHARS_EACH || this.ended.has(id)) return
    this.ended.set(id, raw)
    this.endedChars += raw.length
    // Oldest first out.
    for (const [oldest, kept] of this.ended) {
      if (this.endedChars <= ENDED_CHARS) break
      this.ended.delete(oldest)
      this.endedChars -= kept.length
    }
  }

  /** The task as last seen here, if it is remembered: tried first, then read (`fresh`) when the store has moved on. */
  private async current(id: string, fresh: boolean): Promise<{ raw: string; task: Task } | undefined> {
    const raw = fresh ? undefined : this.known.get(id)
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
    tasks.forEach((task, index) => answers[index] === 1 && this.remember(task, args[index * 8 + 1]!))
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
    const unread = ids.filter((id) => !this.ended.has(id))
    const raws = unread.length > 0 ? await this.redis.mget(unread.map((id) => this.key('task', id))) : []
    const read = new Map(unread.map((id, index) => [id, raws[index]]))
    return ids.flatMap((id) => {
      const raw = this.ended.get(id) ?? read.get(id)
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
    const raw = this.known.get(id)
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
        if (!fresh && this.known.has(id)) {
          fresh = true
          continue
        }
        return undefined
      }
      const at = new Date().toISOString()
      const steps: { task: Task; event: Omit<TaskEvent, 'seq'> }[] = []
      let task = current.task
      for (const change of changes) {
        const previous = task.state
        task = { ...task, ...change.patch, state: change.to, reason: change.reason, updatedAt: at }
        steps.push({ task, event: { taskId: id, at, from: previous, to: change.to, reason: change.reason, attempt: task.attempts } })
      }
      // Each event's seq comes from the script's counter: `%d` stands where JSON has the placeholder 0.
      const templates = steps.map((step) =>
        JSON.stringify({ seq: 0, ...step.event })
          .replaceAll('%', '%%')
          .replace('{"seq":0,', '{"seq":%d,'),
      )
      const raw = JSON.stringify(task)
      // A task that ends here has its dependents read in the same script: the scheduler looks at them next. Those its
      // completion makes ready (as known here) are written ready first: their announcement needs no write of its own.
      const ends = isFinal(task.state)
      const readies = ends ? this.readiedBy(task, at) : []
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
      const announcing = this.announceBehind
        ? readies.map(({ ready }) =>
            this.announceBehind!(ready).then(
              () => ready.id,
              () => undefined,
            ),
          )
        : []
      const [{ answer, inOrder }, announced] = await Promise.all([script, Promise.all(announcing)])
      const [first, ...dependents] = answer as [number, ...(string | null)[]]
      if (first >= 0) {
        this.remember(task, raw)
        if (ends) this.waiting.delete(id)
        const read = ends ? this.parsedAll(dependents) : undefined
        // Those the write made ready (a stale copy here announced one it did not), announced behind it: after a
        // NOSCRIPT the script ran after them, so they are announced again, as any dependent made ready.
        const behind = read?.filter((one) => one.ready && one.state === 'PENDING' && inOrder && announced.includes(one.id))
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

  async update(id: string, state: TaskState, patch: NonNullable<TaskChange['patch']>): Promise<Task | undefined> {
    let fresh = false
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const current = await this.current(id, fresh)
      if (!current || current.task.state !== state) {
        if (!fresh && this.known.has(id)) {
          fresh = true
          continue
        }
        return undefined
      }
      const task = { ...current.task, ...patch, updatedAt: new Date().toISOString() }
      const raw = JSON.stringify(task)
      if ((await runScript(this.redis, UPDATE, 1, this.key('task', id), current.raw, raw)) === 1) {
        this.remember(task, raw)
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
    if (this.options.ownsConnection) await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
