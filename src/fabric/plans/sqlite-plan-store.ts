import { openSqlite, preparedTransaction, type Database, type SqliteDriver, type Statement } from '../sqlite'
import { RowInserter } from '../sqlite-row-inserter'
import type { MirroredUpdate, PlanListFilter, PlanPage, PlanStore } from './plan-store'
import type { NewPlanEvent, NewStepEvent, Plan, PlanEvent } from './plan-types'

/**
 * Plans in the embedded store: tables beside the tasks' in the same SQLite file (`<fabric.dataDir>/tasks.sqlite`),
 * through the task store's connection when this process has one open (openSqlite `join`), else one of their own. WAL and
 * `synchronous = NORMAL` as for tasks: a committed write survives kill -9.
 */

// seq is a plain INTEGER PRIMARY KEY (the next is the largest + 1), not AUTOINCREMENT: rows are never deleted, so the
// order is the same, and a commit no longer rewrites the sqlite_sequence page (as in the task store). Files made with
// AUTOINCREMENT keep it (CREATE … IF NOT EXISTS) and behave the same.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS plans (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  tenant TEXT NOT NULL,
  state TEXT NOT NULL,
  rev INTEGER NOT NULL,
  body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS plans_tenant ON plans (tenant, seq);
CREATE INDEX IF NOT EXISTS plans_state ON plans (state, seq);
CREATE TABLE IF NOT EXISTS plan_events (
  seq INTEGER PRIMARY KEY,
  plan_id TEXT NOT NULL,
  task_id TEXT,
  task_seq INTEGER,
  body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS plan_events_plan ON plan_events (plan_id, seq);
CREATE UNIQUE INDEX IF NOT EXISTS plan_events_task ON plan_events (plan_id, task_seq) WHERE task_seq IS NOT NULL;
`

const parse = (row: unknown): Plan | undefined => (row ? (JSON.parse((row as { body: string }).body) as Plan) : undefined)

function eventFrom(row: { seq: number; plan_id: string; body: string }): PlanEvent {
  return { ...(JSON.parse(row.body) as NewPlanEvent), seq: row.seq, planId: row.plan_id } as PlanEvent
}

export interface SqlitePlanStoreOptions {
  /** The database file (the task store's); its directory is created when missing. `:memory:` for a throwaway one. */
  file: string
  driver?: SqliteDriver
}

export class SqlitePlanStore implements PlanStore {
  private readonly db: Database
  private readonly statements: Record<'insert' | 'get' | 'update' | 'event' | 'events' | 'mirrored' | 'active', Statement>
  /** The step events' multi-row INSERT (copySteps), each row it inserted returned with its place. */
  private readonly mirrorRows: RowInserter
  private readonly write: (plan: Plan, events: readonly NewPlanEvent[], insert: boolean) => PlanEvent[] | undefined
  private readonly mirrorMany: (planId: string, events: readonly NewStepEvent[]) => PlanEvent[]
  private readonly mirrorThenUpdate: (plan: Plan, steps: readonly NewStepEvent[], events: readonly NewPlanEvent[]) => MirroredUpdate

  constructor(options: SqlitePlanStoreOptions) {
    // Joins the task store's connection on the same file (openSqlite): one page cache for both.
    this.db = openSqlite(options.file, SCHEMA, options.driver, { join: true })
    const prepare = (sql: string) => this.db.prepare(sql)
    this.statements = {
      insert: prepare('INSERT INTO plans (id, tenant, state, rev, body) VALUES (?, ?, ?, ?, ?)'),
      get: prepare('SELECT body FROM plans WHERE id = ?'),
      update: prepare('UPDATE plans SET state = ?, rev = ?, body = ? WHERE id = ? AND rev = ?'),
      event: prepare('INSERT INTO plan_events (plan_id, task_id, task_seq, body) VALUES (?, NULL, NULL, ?)'),
      events: prepare('SELECT seq, plan_id, body FROM plan_events WHERE plan_id = ? AND seq > ? ORDER BY seq'),
      mirrored: prepare(
        'SELECT task_id, MAX(task_seq) AS last FROM plan_events WHERE plan_id = ? AND task_id IS NOT NULL GROUP BY task_id',
      ),
      active: prepare(`SELECT body FROM plans WHERE state IN ('RUNNING', 'REVISING', 'SUSPENDED') ORDER BY seq`),
    }
    const append = (planId: string, events: readonly NewPlanEvent[]) =>
      events.map((event) => {
        const info = this.statements.event.run(planId, JSON.stringify(event))
        return { ...event, seq: Number(info.lastInsertRowid), planId } as PlanEvent
      })
    // A step event copied before (the plan's unique task_seq) is skipped. All in as few statements as RowInserter
    // allows (a plan's end copies a dozen: ~6 µs a statement call), its RETURNING naming the rows it inserted by their
    // task_seq, unique in the plan.
    this.mirrorRows = new RowInserter(
      this.db,
      'INSERT OR IGNORE INTO plan_events (plan_id, task_id, task_seq, body) VALUES',
      4,
      'RETURNING seq, task_seq',
    )
    const copySteps = (planId: string, events: readonly NewStepEvent[]) => {
      const inserted = this.mirrorRows.insertReturning<{ seq: number; task_seq: number }>(
        events.flatMap((event) => [planId, event.taskId, event.taskSeq, JSON.stringify(event)]),
      )
      const seqs = new Map(inserted.map((row) => [row.task_seq, row.seq]))
      return events.flatMap((event) => {
        const seq = seqs.get(event.taskSeq)
        return seq === undefined ? [] : [{ ...event, seq, planId } as PlanEvent]
      })
    }
    const writeOne = (plan: Plan, events: readonly NewPlanEvent[], insert: boolean) => {
      if (insert) this.statements.insert.run(plan.id, plan.tenant, plan.state, plan.rev, JSON.stringify(plan))
      else if (this.statements.update.run(plan.state, plan.rev, JSON.stringify(plan), plan.id, plan.rev - 1).changes === 0) return undefined
      return append(plan.id, events)
    }
    // Prepared BEGIN/COMMIT (preparedTransaction), as the task store's: libsql's own wrapper parses both every time.
    this.write = preparedTransaction(this.db, writeOne)
    this.mirrorMany = preparedTransaction(this.db, copySteps)
    // A plan's end with its steps' last transitions: one commit, not two (a commit is most of a small write's cost).
    this.mirrorThenUpdate = preparedTransaction(this.db, (plan: Plan, steps: readonly NewStepEvent[], events: readonly NewPlanEvent[]) => {
      const mirrored = copySteps(plan.id, steps)
      const written = writeOne(plan, events, false)
      return written ? { mirrored, written } : { mirrored }
    })
  }

  async insert(plan: Plan, events: readonly NewPlanEvent[]): Promise<PlanEvent[]> {
    return this.write(plan, events, true)!
  }

  async get(id: string): Promise<Plan | undefined> {
    return parse(this.statements.get.get(id))
  }

  async list(filter: PlanListFilter): Promise<PlanPage> {
    const limit = Math.min(Math.max(filter.limit ?? 50, 1), 500)
    const newest = filter.order === 'newest'
    const clauses = ['tenant = ?', newest ? 'seq < ?' : 'seq > ?']
    const params: unknown[] = [filter.tenant, Number(filter.cursor ?? 0) || (newest ? Number.MAX_SAFE_INTEGER : 0)]
    if (filter.state) (clauses.push('state = ?'), params.push(filter.state))
    const rows = this.db
      .prepare(`SELECT seq, body FROM plans WHERE ${clauses.join(' AND ')} ORDER BY seq ${newest ? 'DESC' : 'ASC'} LIMIT ?`)
      .all(...params, limit + 1) as { seq: number; body: string }[]
    const page = rows.slice(0, limit)
    return { plans: page.map((row) => parse(row)!), ...(rows.length > limit ? { nextCursor: String(page[page.length - 1]!.seq) } : {}) }
  }

  async update(plan: Plan, events: readonly NewPlanEvent[]): Promise<PlanEvent[] | undefined> {
    return this.write(plan, events, false)
  }

  async active(): Promise<Plan[]> {
    return this.statements.active.all().map((row) => parse(row)!)
  }

  async mirror(planId: string, events: readonly NewStepEvent[]): Promise<PlanEvent[]> {
    return events.length ? this.mirrorMany(planId, events) : []
  }

  async mirrorAndUpdate(plan: Plan, steps: readonly NewStepEvent[], events: readonly NewPlanEvent[]): Promise<MirroredUpdate> {
    return this.mirrorThenUpdate(plan, steps, events)
  }

  async mirrored(planId: string): Promise<Map<string, number>> {
    return new Map((this.statements.mirrored.all(planId) as { task_id: string; last: number }[]).map((row) => [row.task_id, row.last]))
  }

  async events(planId: string, afterSeq = 0): Promise<PlanEvent[]> {
    return (this.statements.events.all(planId, afterSeq) as { seq: number; plan_id: string; body: string }[]).map(eventFrom)
  }

  async close(): Promise<void> {
    this.db.close()
  }
}
