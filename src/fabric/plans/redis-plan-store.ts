import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import { runScript } from '../redis-script'
import type { MirroredUpdate, PlanChangeKind, PlanListFilter, PlanPage, PlanStore } from './plan-store'
import { isPlanFinal, type NewPlanEvent, type NewStepEvent, type Plan, type PlanEvent } from './plan-types'

/**
 * Plans on Redis (`fabric.store = redis`), shared by every `execgate serve` node and worker that reaches it. Each
 * write of a plan is one Lua script: the compare-and-set on its `rev`, its indexes and its events land together or
 * not at all, so when several nodes see the same step end, exactly one of them advances the plan (the others lose
 * the compare-and-set, read the plan again and find nothing left to do). Every write is published on one channel,
 * so any node's event streams hear it at once.
 *
 * Keys under the prefix: `plan:<id>` (hash: body, rev, state, seq, tenant), `seq` (counter), `tenant:<t>` (zset of ids
 * by seq, for paging), `active` (zset of plans not ended), `events:<id>` (list: an event's seq is its position from 1),
 * `mirrored:<id>` (hash task id → the last task event copied), `mirroredSeqs:<id>` (set of the task events copied),
 * `engine:<owner>` (a node's lease, renewed while its engine runs). The scripts build no key names of their own.
 */

/** ARGV[1] body, [2] rev, [3] state, [4] tenant, [5] id, [6] the message published, then the events. */
const INSERT = `
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'body', ARGV[1], 'rev', ARGV[2], 'state', ARGV[3], 'seq', seq, 'tenant', ARGV[4])
redis.call('ZADD', KEYS[3], seq, ARGV[5])
redis.call('ZADD', KEYS[4], seq, ARGV[5])
local first = redis.call('LLEN', KEYS[5]) + 1
for i = 7, #ARGV do redis.call('RPUSH', KEYS[5], ARGV[i]) end
redis.call('PUBLISH', KEYS[6], ARGV[6])
return first
`

/**
 * Compare-and-set on rev: ARGV[1] the rev expected, [2] body, [3] new rev, [4] state, [5] '1' when it ended, [6] id,
 * [7] the message published, then the events.
 */
const UPDATE = `
if redis.call('HGET', KEYS[1], 'rev') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'body', ARGV[2], 'rev', ARGV[3], 'state', ARGV[4])
if ARGV[5] == '1' then redis.call('ZREM', KEYS[3], ARGV[6]) end
local first = redis.call('LLEN', KEYS[2]) + 1
for i = 8, #ARGV do redis.call('RPUSH', KEYS[2], ARGV[i]) end
redis.call('PUBLISH', KEYS[4], ARGV[7])
return first
`

/**
 * Copies each step event not copied yet, from ARGV[from] on as (task id, task seq, body) triples, into `seqs` (its seq
 * in the log, 0 when it was there already): Lua shared by MIRROR and MIRROR_UPDATE, given their keys' names.
 */
const copySteps = (keys: { events: string; copied: string; last: string }, from: string) => `
local seqs = {}
for i = ${from}, #ARGV, 3 do
  if redis.call('SADD', ${keys.copied}, ARGV[i + 1]) == 1 then
    local last = tonumber(redis.call('HGET', ${keys.last}, ARGV[i]) or '0')
    if tonumber(ARGV[i + 1]) > last then redis.call('HSET', ${keys.last}, ARGV[i], ARGV[i + 1]) end
    seqs[#seqs + 1] = redis.call('RPUSH', ${keys.events}, ARGV[i + 2])
  else
    seqs[#seqs + 1] = 0
  end
end
`

/** Appends each step event not copied yet: ARGV[1] the message published, then (task id, task seq, body) per event. */
const MIRROR = `${copySteps({ events: 'KEYS[1]', copied: 'KEYS[2]', last: 'KEYS[3]' }, '2')}
if #seqs > 0 then redis.call('PUBLISH', KEYS[4], ARGV[1]) end
return seqs
`

/**
 * MIRROR then UPDATE in one script (a plan's end: its steps' last transitions, then its own, one round trip). The steps
 * are copied whatever the compare-and-set finds, as MIRROR alone would. KEYS[1]–[4] as UPDATE's, [5] and [6] MIRROR's
 * set of copied events and hash of the last copied. ARGV[1]–[7] as UPDATE's ([7] published when the plan is written),
 * [8] the message published when only steps were copied, [9] how many plan events follow, then they, then (task id,
 * task seq, body) per step event. Answers UPDATE's answer (0: lost), then MIRROR's seqs.
 */
const MIRROR_UPDATE = `
local planEvents = tonumber(ARGV[9])
${copySteps({ events: 'KEYS[2]', copied: 'KEYS[5]', last: 'KEYS[6]' }, '10 + planEvents')}
local first = 0
if redis.call('HGET', KEYS[1], 'rev') == ARGV[1] then
  redis.call('HSET', KEYS[1], 'body', ARGV[2], 'rev', ARGV[3], 'state', ARGV[4])
  if ARGV[5] == '1' then redis.call('ZREM', KEYS[3], ARGV[6]) end
  first = redis.call('LLEN', KEYS[2]) + 1
  for i = 10, 9 + planEvents do redis.call('RPUSH', KEYS[2], ARGV[i]) end
  redis.call('PUBLISH', KEYS[4], ARGV[7])
elseif #seqs > 0 then
  redis.call('PUBLISH', KEYS[4], ARGV[8])
end
local answer = {first}
for _, seq in ipairs(seqs) do answer[#answer + 1] = seq end
return answer
`

export interface RedisPlanStoreOptions {
  /** An ioredis connection this store may use (and closes on `close` when `ownsConnection`). */
  redis: Redis
  /** Key prefix, so several deployments can share one Redis. @default 'execgate:plans' */
  prefix?: string
  ownsConnection?: boolean
  /**
   * The task store's connection (left open by `close`): inserts are sent on it, so that a task written after an
   * insert (a new plan's steps, sent before the insert's answer) lands after the plan (`insertLandsBeforeTasks`).
   */
  tasksConnection?: Redis
}

/**
 * A `changes` message: `<kind>:<origin>:<plan id>`, the kind a PlanChangeKind, the origin the publishing store's own
 * random name (a store does not hear back what it published: its engine told its listeners already).
 */
const MESSAGE = /^(write|step|moved):([^:]+):(.+)$/

/** The driver lease: taken when free, renewed by its holder, never taken from a holder whose lease runs. */
const DRIVE = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`

/** An engine stopping: its lease goes, and the driver lease if it held it (another engine drives at its next tick). */
const RELEASE = `
redis.call('DEL', KEYS[1])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
`

export class RedisPlanStore implements PlanStore {
  private readonly redis: Redis
  private readonly prefix: string
  private subscriber: Redis | undefined
  private readonly watchers = new Set<(planId: string, kind: PlanChangeKind) => void>()
  private readonly origin = randomUUID()
  readonly insertLandsBeforeTasks: boolean

  constructor(private readonly options: RedisPlanStoreOptions) {
    this.redis = options.redis
    this.prefix = options.prefix ?? 'execgate:plans'
    this.insertLandsBeforeTasks = options.tasksConnection !== undefined
  }

  private key(...parts: string[]): string {
    return [this.prefix, ...parts].join(':')
  }

  private message(kind: PlanChangeKind, planId: string): string {
    return `${kind}:${this.origin}:${planId}`
  }

  private number(events: readonly NewPlanEvent[], planId: string, first: number): PlanEvent[] {
    return events.map((event, index) => ({ ...event, seq: first + index, planId }) as PlanEvent)
  }

  async insert(plan: Plan, events: readonly NewPlanEvent[]): Promise<PlanEvent[]> {
    const { tasksConnection } = this.options
    // On the task store's connection, EVAL: the command sent now is the one that runs (never an EVAL sent again after
    // a NOSCRIPT, behind the steps' insert).
    const run = (...args: (string | number)[]) =>
      tasksConnection ? tasksConnection.eval(INSERT, 6, ...args) : runScript(this.redis, INSERT, 6, ...args)
    const first = (await run(
      this.key('plan', plan.id),
      this.key('seq'),
      this.key('tenant', plan.tenant),
      this.key('active'),
      this.key('events', plan.id),
      this.key('changes'),
      JSON.stringify(plan),
      String(plan.rev),
      plan.state,
      plan.tenant,
      plan.id,
      this.message('write', plan.id),
      ...events.map((event) => JSON.stringify(event)),
    )) as number
    return this.number(events, plan.id, first)
  }

  async get(id: string): Promise<Plan | undefined> {
    const body = await this.redis.hget(this.key('plan', id), 'body')
    return body ? (JSON.parse(body) as Plan) : undefined
  }

  private async bodies(ids: readonly string[]): Promise<(Plan | undefined)[]> {
    if (ids.length === 0) return []
    const read = this.redis.pipeline()
    for (const id of ids) read.hget(this.key('plan', id), 'body')
    const results = (await read.exec()) ?? []
    return results.map(([, body]) => (typeof body === 'string' ? (JSON.parse(body) as Plan) : undefined))
  }

  async list(filter: PlanListFilter): Promise<PlanPage> {
    const limit = Math.min(Math.max(filter.limit ?? 50, 1), 500)
    const newest = filter.order === 'newest'
    const key = this.key('tenant', filter.tenant)
    const matched: { seq: number; plan: Plan }[] = []
    let after = Number(filter.cursor ?? 0) || 0
    // A state filter applies after reading, a batch of the tenant's plans at a time, until the page is full.
    while (matched.length <= limit) {
      const batch = newest
        ? await this.redis.zrevrangebyscore(key, after ? `(${after}` : '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, 200)
        : await this.redis.zrangebyscore(key, `(${after}`, '+inf', 'WITHSCORES', 'LIMIT', 0, 200)
      if (batch.length === 0) break
      const ids = batch.filter((_, index) => index % 2 === 0)
      const seqs = batch.filter((_, index) => index % 2 === 1).map(Number)
      ;(await this.bodies(ids)).forEach((plan, index) => {
        if (plan && (!filter.state || plan.state === filter.state)) matched.push({ seq: seqs[index]!, plan })
      })
      after = seqs[seqs.length - 1]!
    }
    const page = matched.slice(0, limit)
    return { plans: page.map((entry) => entry.plan), ...(matched.length > limit ? { nextCursor: String(page[page.length - 1]!.seq) } : {}) }
  }

  async update(plan: Plan, events: readonly NewPlanEvent[]): Promise<PlanEvent[] | undefined> {
    const first = (await runScript(
      this.redis,
      UPDATE,
      4,
      ...this.updateKeys(plan),
      ...this.updateArgs(plan),
      ...events.map((event) => JSON.stringify(event)),
    )) as number
    return first === 0 ? undefined : this.number(events, plan.id, first)
  }

  /** UPDATE's keys, the first four of MIRROR_UPDATE's. */
  private updateKeys(plan: Plan): string[] {
    return [this.key('plan', plan.id), this.key('events', plan.id), this.key('active'), this.key('changes')]
  }

  /** UPDATE's ARGV[1]–[7], MIRROR_UPDATE's too. */
  private updateArgs(plan: Plan): string[] {
    return [
      String(plan.rev - 1),
      JSON.stringify(plan),
      String(plan.rev),
      plan.state,
      isPlanFinal(plan.state) ? '1' : '0',
      plan.id,
      this.message('write', plan.id),
    ]
  }

  /** A plan's end: its steps' last transitions copied and the plan written, in one script (one round trip). */
  async mirrorAndUpdate(plan: Plan, steps: readonly NewStepEvent[], events: readonly NewPlanEvent[]): Promise<MirroredUpdate> {
    const [first, ...seqs] = (await runScript(
      this.redis,
      MIRROR_UPDATE,
      6,
      ...this.updateKeys(plan),
      this.key('mirroredSeqs', plan.id),
      this.key('mirrored', plan.id),
      ...this.updateArgs(plan),
      this.message('moved', plan.id),
      String(events.length),
      ...events.map((event) => JSON.stringify(event)),
      ...this.stepArgs(steps),
    )) as number[]
    return {
      mirrored: this.copied(plan.id, steps, seqs),
      ...(first ? { written: this.number(events, plan.id, first) } : {}),
    }
  }

  async active(): Promise<Plan[]> {
    const plans = await this.bodies(await this.redis.zrange(this.key('active'), '0', '-1'))
    return plans.filter((plan): plan is Plan => plan !== undefined && !isPlanFinal(plan.state))
  }

  async mirror(planId: string, events: readonly NewStepEvent[]): Promise<PlanEvent[]> {
    if (events.length === 0) return []
    const seqs = (await runScript(
      this.redis,
      MIRROR,
      4,
      this.key('events', planId),
      this.key('mirroredSeqs', planId),
      this.key('mirrored', planId),
      this.key('changes'),
      // The log grew; the plan itself did not change: only live readers look.
      this.message('moved', planId),
      ...this.stepArgs(events),
    )) as number[]
    return this.copied(planId, events, seqs)
  }

  /** Step events as MIRROR's and MIRROR_UPDATE's arguments: task id, task seq, body. */
  private stepArgs(events: readonly NewStepEvent[]): string[] {
    return events.flatMap((event) => [event.taskId, String(event.taskSeq), JSON.stringify(event)])
  }

  /** The step events a copy appended (seq 0: copied before), numbered. */
  private copied(planId: string, events: readonly NewStepEvent[], seqs: readonly number[]): PlanEvent[] {
    return events.flatMap((event, index) => (seqs[index] ? [{ ...event, seq: seqs[index], planId } as PlanEvent] : []))
  }

  async mirrored(planId: string): Promise<Map<string, number>> {
    const last = await this.redis.hgetall(this.key('mirrored', planId))
    return new Map(Object.entries(last).map(([taskId, seq]) => [taskId, Number(seq)]))
  }

  async events(planId: string, afterSeq = 0): Promise<PlanEvent[]> {
    const raws = await this.redis.lrange(this.key('events', planId), String(afterSeq), '-1')
    return raws.map((raw, index) => ({ ...(JSON.parse(raw) as NewPlanEvent), seq: afterSeq + index + 1, planId }) as PlanEvent)
  }

  /**
   * Hears every plan written by another node, and every step of a plan that moved in another process (`announceStep`),
   * with the plan's id, through a connection of its own opened at the first call.
   */
  watch(listener: (planId: string, kind: PlanChangeKind) => void): () => void {
    if (!this.subscriber) {
      const subscriber = (this.subscriber = this.redis.duplicate())
      subscriber.on('message', (_channel: string, message: string) => {
        const [, kind, origin, planId] = MESSAGE.exec(message) ?? []
        if (!planId || origin === this.origin) return
        this.watchers.forEach((watcher) => watcher(planId, kind as PlanChangeKind))
      })
      // A subscription that fails leaves the tick to find other nodes' writes: slower, never wrong.
      subscriber.subscribe(this.key('changes')).catch(() => undefined)
    }
    this.watchers.add(listener)
    return () => this.watchers.delete(listener)
  }

  /** Renews this engine's lease: while it holds one, the plans it revises are not taken over. */
  async heartbeat(owner: string, ttlMs: number): Promise<void> {
    await this.redis.set(this.key('engine', owner), '1', 'PX', Math.max(1, Math.round(ttlMs)))
  }

  async release(owner: string): Promise<void> {
    await runScript(this.redis, RELEASE, 2, this.key('engine', owner), this.key('driver'), owner)
  }

  /** Says a step of the plan moved (a task transition, in whichever process ran it): the driver and live readers hear it. */
  async announceStep(planId: string, kind: Exclude<PlanChangeKind, 'write'> = 'step'): Promise<void> {
    await this.redis.publish(this.key('changes'), this.message(kind, planId))
  }

  /** Takes or renews the deployment's plan-driver lease for `owner`; false while another engine holds it. */
  async drive(owner: string, ttlMs: number): Promise<boolean> {
    return (await runScript(this.redis, DRIVE, 1, this.key('driver'), owner, String(Math.max(1, Math.round(ttlMs))))) === 1
  }

  /** Whether the engine named `owner` renewed its lease lately, on whichever machine it runs. */
  async ownerAlive(owner: string): Promise<boolean> {
    return (await this.redis.exists(this.key('engine', owner))) === 1
  }

  async close(): Promise<void> {
    this.watchers.clear()
    await this.subscriber?.quit().catch(() => this.subscriber?.disconnect())
    if (this.options.ownsConnection) await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
