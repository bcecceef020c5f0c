import type { Redis } from 'ioredis'
import type { TaskChange, TaskListFilter, TaskPage, TaskStore } from './task-store'
import { holdsFor } from './task-store'
import type { Task, TaskEvent, TaskState } from './task-types'
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

const TRANSITION = `
local current = redis.call('GET', KEYS[1])
if current ~= ARGV[1] then return -1 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[2], ARGV[5])
redis.call('SADD', KEYS[3], ARGV[5])
local seq = redis.call('INCR', KEYS[4])
redis.call('RPUSH', KEYS[5], string.format(ARGV[3], seq))
if ARGV[4] == '' then redis.call('ZREM', KEYS[6], ARGV[5]) else redis.call('ZADD', KEYS[6], tonumber(ARGV[4]), ARGV[5]) end
return seq
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

function deadlineScore(task: Task): string {
  return task.state === 'PENDING' && task.attempts === 0 && task.deadline ? String(Date.parse(task.deadline)) : ''
}

export class RedisTaskStore implements TaskStore {
  private readonly redis: Redis
  private readonly prefix: string

  constructor(private readonly options: RedisTaskStoreOptions) {
    this.redis = options.redis
    this.prefix = options.prefix ?? 'execgate:tasks'
  }

  private key(...parts: string[]): string {
    return [this.prefix, ...parts].join(':')
  }

  private async read(id: string): Promise<{ raw: string; task: Task } | undefined> {
    const raw = await this.redis.get(this.key('task', id))
    return raw ? { raw, task: JSON.parse(raw) as Task } : undefined
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
    const answers = (await this.redis.eval(INSERT, 0, this.prefix, ...args)) as (string | number)[]
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
    return raws.filter((raw): raw is string => raw !== null).map((raw) => JSON.parse(raw) as Task)
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

  async transition(id: string, from: readonly TaskState[], change: TaskChange): Promise<{ task: Task; event: TaskEvent } | undefined> {
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const current = await this.read(id)
      // Checked on the task as read: the script below writes only if the stored task is still exactly that one.
      if (!current || !from.includes(current.task.state) || !holdsFor(current.task, change)) return undefined
      const at = new Date().toISOString()
      const task: Task = { ...current.task, ...change.patch, state: change.to, reason: change.reason, updatedAt: at }
      const eventTemplate = JSON.stringify({
        seq: 0,
        taskId: id,
        at,
        from: current.task.state,
        to: change.to,
        reason: change.reason,
        attempt: task.attempts,
      })
      // The event's seq comes from the script's counter: `%d` stands where JSON has the placeholder 0.
      const template = eventTemplate.replaceAll('%', '%%').replace('{"seq":0,', '{"seq":%d,')
      const seq = (await this.redis.eval(
        TRANSITION,
        6,
        this.key('task', id),
        this.key('state', current.task.state),
        this.key('state', change.to),
        this.key('eventSeq'),
        this.key('events', id),
        this.key('deadlines'),
        current.raw,
        JSON.stringify(task),
        template,
        deadlineScore(task),
        id,
      )) as number
      if (seq >= 0)
        return {
          task,
          event: { seq, taskId: id, at, from: current.task.state, to: change.to, reason: change.reason, attempt: task.attempts },
        }
    }
    return undefined
  }

  async update(id: string, state: TaskState, patch: NonNullable<TaskChange['patch']>): Promise<Task | undefined> {
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      const current = await this.read(id)
      if (!current || current.task.state !== state) return undefined
      const task = { ...current.task, ...patch, updatedAt: new Date().toISOString() }
      if ((await this.redis.eval(UPDATE, 1, this.key('task', id), current.raw, JSON.stringify(task))) === 1) return task
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
    return this.getMany(await this.redis.smembers(this.key('dependents', id)))
  }

  async events(id: string, afterSeq = 0): Promise<TaskEvent[]> {
    const raws = await this.redis.lrange(this.key('events', id), 0, -1)
    return raws.map((raw) => JSON.parse(raw) as TaskEvent).filter((event) => event.seq > afterSeq)
  }

  async close(): Promise<void> {
    if (this.options.ownsConnection) await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
