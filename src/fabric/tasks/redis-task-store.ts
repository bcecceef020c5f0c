import type { Redis } from 'ioredis'
import { runScript } from '../redis-script'
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

/**
 * A compare-and-set of the task's JSON with one or more transitions in a row: ARGV[1] the JSON expected, [2] the new
 * JSON, [3] the start-by score ('' for none), [4] the id, then one event template per transition (`%d` for its seq).
 * Moves the id from the first state's index to the last's and answers the first event's seq (the others follow it:
 * one script, so nothing else takes a seq between them), or -1 when the stored task is not the one expected. With a
 * seventh key (`dependents:<id>`, when the transitions end the task) ARGV[5] is the prefix and the templates start at
 * ARGV[6]: the dependents' JSON follow the seq in the answer, read in the same script (no round trip of their own).
 */
const TRANSITION = `
local current = redis.call('GET', KEYS[1])
if current ~= ARGV[1] then return {-1} end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[2], ARGV[4])
redis.call('SADD', KEYS[3], ARGV[4])
local templates = 5
if #KEYS >= 7 then templates = 6 end
local first = -1
for i = templates, #ARGV do
  local seq = redis.call('INCR', KEYS[4])
  if first < 0 then first = seq end
  redis.call('RPUSH', KEYS[5], string.format(ARGV[i], seq))
end
if ARGV[3] == '' then redis.call('ZREM', KEYS[6], ARGV[4]) else redis.call('ZADD', KEYS[6], tonumber(ARGV[3]), ARGV[4]) end
local answer = {first}
if #KEYS >= 7 then
  local ids = redis.call('SMEMBERS', KEYS[7])
  for from = 1, #ids, 500 do
    local keys = {}
    for i = from, math.min(from + 499, #ids) do keys[#keys + 1] = ARGV[5] .. ':task:' .. ids[i] end
    for _, raw in ipairs(redis.call('MGET', unpack(keys))) do answer[#answer + 1] = raw end
  end
end
return answer
`

/** The JSON of every task that depends on KEYS[1]'s task, in one round trip: ARGV[1] the prefix. */
const DEPENDENTS = `
local ids = redis.call('SMEMBERS', KEYS[1])
local raws = {}
for from = 1, #ids, 500 do
  local keys = {}
  for i = from, math.min(from + 499, #ids) do keys[#keys + 1] = ARGV[1] .. ':task:' .. ids[i] end
  for _, raw in ipairs(redis.call('MGET', unpack(keys))) do raws[#raws + 1] = raw end
end
return raws
`

/**
 * Inserts a batch in one script: per task (8 arguments each: id, JSON, tenant, state, idempotency key, deadline score,
 * event template, dependencies joined by newlines) it answers 1 when stored, or the id of the task already stored
 * under the same idempotency key or the same id, which is then left as it is. Atomic, so two nodes submitting with
 * one key (a client's retry that reached another node) or one plan step's task store one task, never two.
 */
const INSERT = `
local P = ARGV[1]
local answers = {}
for i = 2, #ARGV, 8 do
  local id, body, tenant, state, key, deadline, event, deps =
    ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]
  local taken = false
  if key ~= '' then
    local other = redis.call('HGET', P .. ':idempotency:' .. tenant, key)
    if other and redis.call('EXISTS', P .. ':task:' .. other) == 1 then taken = other end
  end
  if not taken and redis.call('EXISTS', P .. ':task:' .. id) == 1 then taken = id end
  if taken then
    answers[#answers + 1] = taken
  else
    if key ~= '' then redis.call('HSET', P .. ':idempotency:' .. tenant, key, id) end
    redis.call('SET', P .. ':task:' .. id, body)
    redis.call('ZADD', P .. ':tenant:' .. tenant, redis.call('INCR', P .. ':seq'), id)
    redis.call('SADD', P .. ':state:' .. state, id)
    for dep in string.gmatch(deps, '[^\\n]+') do redis.call('SADD', P .. ':dependents:' .. dep, id) end
    redis.call('RPUSH', P .. ':events:' .. id, string.format(event, redis.call('INCR', P .. ':eventSeq')))
    if deadline ~= '' then redis.call('ZADD', P .. ':deadlines', tonumber(deadline), id) end
    answers[#answers + 1] = 1
  end
end
return answers
`

const UPDATE = `
local current = redis.call('GET', KEYS[1])
if current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
`

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

  constructor(private readonly options: RedisTaskStoreOptions) {
    this.redis = options.redis
    this.prefix = options.prefix ?? 'execgate:tasks'
  }

  private key(...parts: string[]): string {
    return [this.prefix, ...parts].join(':')
  }

  private async read(id: string): Promise<{ raw: string; task: Task } | undefined> {
    const raw = await this.redis.get(this.key('task', id))
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
    if (isFinal(task.state)) return
    this.known.set(task.id, raw)
    // Oldest first out: a Map iterates in insertion order.
    if (this.known.size > KNOWN_TASKS) this.known.delete(this.known.keys().next().value!)
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
    const answers = (await runScript(this.redis, INSERT, 0, this.prefix, ...args)) as (string | number)[]
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
    const raws = await this.redis.mget(ids.map((id) => this.key('task', id)))
    return raws.filter((raw): raw is string => raw !== null).map((raw) => this.parsed(raw).task)
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
    return moved && { task: moved.task, event: moved.steps[0]!.event, ...(moved.dependents ? { dependents: moved.dependents } : {}) }
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
      // A task that ends here has its dependents read in the same script: the scheduler looks at them next.
      const ends = isFinal(task.state)
      const [first, ...dependents] = (await runScript(
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
        ...(ends ? [this.prefix] : []),
        ...templates,
      )) as [number, ...(string | null)[]]
      if (first >= 0) {
        this.remember(task, raw)
        return {
          task,
          steps: steps.map((step, index) => ({ task: step.task, event: { seq: first + index, ...step.event } })),
          ...(ends ? { dependents: this.parsedAll(dependents) } : {}),
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
