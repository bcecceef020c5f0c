import { openSqlite, preparedTransaction, type Database, type SqliteDriver, type Statement } from '../sqlite'
import type {
  InsertedTasks,
  InsideStart,
  StartInside,
  TaskChange,
  TaskListFilter,
  TaskPage,
  TaskStore,
  TransitionOf,
  TransitionSteps,
} from './task-store'
import { afterChange, holdsFor } from './task-store'
import { isFinal, type Task, type TaskEvent, type TaskState } from './task-types'
import { DUE_ORDER_SQL } from './due-order'
import { SCHEMA, eventFrom, parse, type EventRow, type EventValues } from './sqlite-task-rows'

/**
 * The embedded store: one SQLite file (libsql, synchronous and in-process, so a write is a function call,
 * not a round trip). WAL mode lets readers run beside the writer; `synchronous = NORMAL` in WAL keeps every
 * committed transition across a process crash (kill -9) and loses at most the last ones on a power loss.
 */

export type { Database, Statement } from '../sqlite'

/** Logs read by one statement at most (eventsOfMany): a bounded set of prepared statements. */
const LOGS_READ_TOGETHER = 16

/** Copies of tasks kept for their next transition (SqliteTaskStore.remember): a slot's worth and more, ~2 KB each. */
const COPIES_KEPT = 1024

/** The file of the embedded store under `fabric.dataDir` (the plans share it). */
export const TASKS_SQLITE_FILE_NAME = 'tasks.sqlite'

export interface SqliteTaskStoreOptions {
  /** The database file; its directory is created when missing. `:memory:` for a store that dies with the process. */
  file: string
  /** A libsql (better-sqlite3 API) constructor to use instead of loading the package (tests, bundlers). */
  driver?: SqliteDriver
}

export class SqliteTaskStore implements TaskStore {
  private readonly db: Database
  private readonly statements: Record<string, Statement>
  /** eventsOfMany's SELECT by number of logs read. */
  private readonly logReads = new Map<number, Statement>()
  /** The action log's INSERT by number of rows (1 for most transitions, 3 for a task started at submit). */
  private readonly eventInserts = new Map<number, Statement>()
  /** The body this connection last wrote of each task that may still move (remember), by id. */
  private readonly copies = new Map<string, { task: Task; body: string }>()
  private readonly insertMany: (tasks: readonly Task[], reason: string) => Task[]
  private readonly transitionMany: (
    id: string,
    from: readonly TaskState[],
    changes: readonly TaskChange[],
    startsDependents?: boolean,
  ) => TransitionSteps | undefined
  private readonly insertStarting: (
    tasks: readonly Task[],
    reason: string,
    now: number,
    start: { id: string; changes: readonly TaskChange[] },
  ) => InsertedTasks
  private readonly updateOne: (id: string, state: TaskState, patch: NonNullable<TaskChange['patch']>) => Task | undefined
  /** Dependents started inside the end write in flight (startDependents): begun once it commits, released if not. */
  private startedInside: { start: InsideStart; steps: TransitionSteps }[] = []
  /** Set by the scheduler of this process when no dispatcher hands out runs (TaskStore.startInside). */
  startInside?: StartInside

  constructor(options: SqliteTaskStoreOptions) {
    this.db = openSqlite(options.file, SCHEMA, options.driver)
    const prepare = (sql: string) => this.db.prepare(sql)
    this.statements = {
      // Positional parameters: a named one is looked up in the object passed, on every run.
      insert:
        prepare(`INSERT INTO tasks (id, tenant, state, priority, ready, not_before, deadline_at, attempts, intent_id, idempotency_key, body)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      // The same, only while no due task comes first (a higher or equal priority: a new task is last among equals).
      insertFirst:
        prepare(`INSERT INTO tasks (id, tenant, state, priority, ready, not_before, deadline_at, attempts, intent_id, idempotency_key, body)
        SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
        WHERE NOT EXISTS (SELECT 1 FROM tasks WHERE state = 'PENDING' AND ready = 1 AND not_before <= ? AND priority >= ?)`),
      byKey: prepare('SELECT body FROM tasks WHERE tenant = ? AND idempotency_key = ?'),
      get: prepare('SELECT body FROM tasks WHERE id = ?'),
      dependency: prepare('INSERT OR IGNORE INTO task_dependencies (depends_on, task_id) VALUES (?, ?)'),
      update: prepare('UPDATE tasks SET state = ?, ready = ?, not_before = ?, attempts = ?, body = ? WHERE id = ?'),
      updateOver: prepare('UPDATE tasks SET state = ?, ready = ?, not_before = ?, attempts = ?, body = ? WHERE id = ? AND body = ?'),
      due: prepare(`SELECT body FROM tasks WHERE state = 'PENDING' AND ready = 1 AND not_before <= ? ORDER BY ${DUE_ORDER_SQL} LIMIT ?`),
      expired: prepare(`SELECT body FROM tasks WHERE state = 'PENDING' AND attempts = 0 AND deadline_at IS NOT NULL AND deadline_at < ?`),
      // In the due order: a completion starts the dependents it makes ready in that order (startDependents).
      dependents: prepare(
        `SELECT t.seq, t.body FROM task_dependencies d JOIN tasks t ON t.id = d.task_id WHERE d.depends_on = ? ORDER BY ${DUE_ORDER_SQL}`,
      ),
      // A due task ahead of a task of priority ? and seq ? in the due order (the index's range: priority ? and up).
      ahead: prepare(
        `SELECT 1 FROM tasks WHERE state = 'PENDING' AND ready = 1 AND priority >= ? AND not_before <= ?
        AND (priority > ? OR seq < ?) LIMIT 1`,
      ),
      hasDependents: prepare('SELECT 1 FROM task_dependencies WHERE depends_on = ? LIMIT 1'),
      events: prepare('SELECT * FROM task_events WHERE task_id = ? AND seq > ? ORDER BY seq'),
    }
    // Prepared BEGIN/COMMIT (preparedTransaction): two transactions a trivial task, each µs cheaper.
    this.insertMany = preparedTransaction(this.db, (tasks: readonly Task[], reason: string) =>
      tasks.map((task) => this.stored(task) ?? this.insertRow(task, reason)!),
    )
    this.transitionMany = preparedTransaction(
      this.db,
      (id: string, from: readonly TaskState[], changes: readonly TaskChange[], startsDependents = false) => {
        const moved = this.onCurrent(id, (current, write) =>
          from.includes(current.state) && changes.every((change) => holdsFor(current, change))
            ? this.applySteps(current, changes, write)
            : undefined,
        )
        if (!moved) return undefined
        // An end's dependents read in its own transaction (TransitionSteps.dependents): the scheduler's next step after
        // an end, without a statement, a promise and a turn of its own.
        if (isFinal(moved.task.state)) {
          const rows = this.dependentRows(id)
          moved.dependents = rows.map((row) => parse(row)!)
          if (startsDependents && moved.task.state === 'COMPLETED' && this.startInside) this.startDependents(moved.task, rows)
        }
        return moved
      },
    )
    this.insertStarting = preparedTransaction(
      this.db,
      (tasks: readonly Task[], reason: string, now: number, start: { id: string; changes: readonly TaskChange[] }) => {
        let started: TransitionSteps | undefined
        const inserted = tasks.map((task) => {
          const existing = this.stored(task)
          if (existing) return existing
          if (task.id !== start.id || started) return this.insertRow(task, reason)!
          // Started at once: its submission and start in the log, in order, and its row written once, as started (not
          // inserted PENDING and rewritten: a statement and a serialisation of the task fewer per task); the three log
          // rows in one statement. A new task comes last among equals in the due order: it is first only when every due
          // task (its batch's inserted before it too) has a lower priority, which its INSERT checks itself.
          const submitted: EventValues = [task.id, task.createdAt, null, task.state, reason, 0]
          started = this.applySteps(task, start.changes, (first) => this.insertRow(first, reason, false, now) !== undefined, submitted)
          return started ? task : this.insertRow(task, reason)!
        })
        return started ? { tasks: inserted, started } : { tasks: inserted }
      },
    )
    // A read (or the copy), then a write of it: in one transaction like the others, or another process's claim landing
    // between the two would be overwritten (the task back to PENDING, its claim lost).
    this.updateOne = preparedTransaction(this.db, (id: string, state: TaskState, patch: NonNullable<TaskChange['patch']>) =>
      this.onCurrent(id, (current, write) => {
        if (current.state !== state) return undefined
        const task = { ...current, ...patch, updatedAt: new Date().toISOString() }
        return write(task) ? task : undefined
      }),
    )
  }

  /**
   * `change` made to the task as this connection knows it, inside the caller's transaction: first on its copy (the body
   * it last wrote), `write` then landing only while the row still holds that body, with no read first (a point read is
   * ~15 µs of libsql, a fifth of a task's store time); when there is no copy, the copy fails `change`'s conditions
   * (it may be stale), or another connection wrote the task since, on the task as read, `write` unconditional.
   * Undefined when `change` answers undefined for the task as stored, or there is no such task.
   */
  private onCurrent<R>(id: string, change: (current: Task, write: (task: Task) => boolean) => R | undefined): R | undefined {
    const copy = this.copies.get(id)
    if (copy) {
      this.copies.delete(id)
      const changed = change(copy.task, (task) => this.write(task, copy.body))
      if (changed !== undefined) return changed
    }
    const current = parse(this.statements.get!.get(id))
    return current && change(current, (task) => this.write(task))
  }

  /**
   * Keeps the body just written for the task's next transition (movedFromCopy), while the task may still move: an
   * ended task's copy is dropped. At most COPIES_KEPT, the oldest dropped first (a backlog's tasks are read as before).
   */
  private remember(task: Task, body: string): void {
    if (isFinal(task.state)) return
    this.copies.set(task.id, { task, body })
    if (this.copies.size > COPIES_KEPT) this.copies.delete(this.copies.keys().next().value!)
  }

  /** The task already stored under the new one's idempotency key, if any (it is answered instead). */
  private stored(task: Task): Task | undefined {
    return task.idempotencyKey ? parse(this.statements.byKey!.get(task.tenant, task.idempotencyKey)) : undefined
  }

  /**
   * Stores the task's row and dependencies, and (unless its caller logged it already) its submission event. With
   * `firstAt`, only when no task due at that time comes before it in the due order: undefined, nothing stored, else.
   */
  private insertRow(task: Task, reason: string, logged = true, firstAt?: number): Task | undefined {
    const body = JSON.stringify(task)
    const values = [
      task.id,
      task.tenant,
      task.state,
      task.priority,
      task.ready ? 1 : 0,
      task.notBefore,
      task.deadline ? Date.parse(task.deadline) : null,
      task.attempts,
      task.intentId ?? null,
      task.idempotencyKey ?? null,
      body,
    ]
    if (firstAt === undefined) this.statements.insert!.run(values)
    else if (this.statements.insertFirst!.run([...values, firstAt, task.priority]).changes === 0) return undefined
    this.remember(task, body)
    for (const dependency of task.dependencies) this.statements.dependency!.run(dependency, task.id)
    if (logged) this.submitted(task, reason)
    return task
  }

  private submitted(task: Task, reason: string): void {
    this.logEvents([[task.id, task.createdAt, null, task.state, reason, 0]])
  }

  /**
   * Rows of the action log in one INSERT (libsql costs ~1.5 µs a statement call, and a task started at submit logs
   * three); answers the last row's seq. One statement under the write lock numbers its rows in order, one apart.
   */
  private logEvents(rows: readonly EventValues[]): number {
    let statement = this.eventInserts.get(rows.length)
    if (!statement) {
      const values = rows.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')
      statement = this.db.prepare(`INSERT INTO task_events (task_id, at, from_state, to_state, reason, attempt) VALUES ${values}`)
      this.eventInserts.set(rows.length, statement)
    }
    return Number(statement.run(rows.length === 1 ? rows[0] : rows.flat()).lastInsertRowid)
  }

  /**
   * `changes` applied to `current` in order, inside the caller's transaction: the end state written once by `write`
   * (an update, an update over a copy's body, or the insert of a task started at submit), then an event each (after
   * `logged`, a row its caller logs first in the same statement). Undefined, nothing logged, when `write` wrote nothing.
   */
  private applySteps(
    current: Task,
    changes: readonly TaskChange[],
    write: (task: Task) => boolean,
    logged?: EventValues,
  ): TransitionSteps | undefined {
    const at = new Date().toISOString()
    const rows: EventValues[] = logged ? [logged] : []
    const tasks: Task[] = []
    let task = current
    for (const change of changes) {
      const from = task.state
      task = afterChange(task, change, at)
      rows.push([task.id, at, from, change.to, change.reason, task.attempts])
      tasks.push(task)
    }
    // Only the chain's end state is ever read: one row write for all of it, before the log (a copy found stale writes neither).
    if (!write(task)) return undefined
    const firstStep = rows.length === 0 ? 0 : this.logEvents(rows) - tasks.length + 1
    const offset = rows.length - tasks.length
    const steps: TransitionSteps['steps'] = tasks.map((stepTask, index) => {
      const [taskId, , from, to, reason, attempt] = rows[offset + index]!
      const event: TaskEvent = { seq: firstStep + index, taskId, at, from, to, reason, attempt }
      return { event, task: stepTask }
    })
    return { task, steps }
  }

  /** Writes the task's row; with `stored`, only over that body (a copy's), answering whether it did. */
  private write(task: Task, stored?: string): boolean {
    const body = JSON.stringify(task)
    const values = [task.state, task.ready ? 1 : 0, task.notBefore, task.attempts, body, task.id]
    const written = stored === undefined ? this.statements.update!.run(...values) : this.statements.updateOver!.run(...values, stored)
    if (written.changes === 0) return false
    this.remember(task, body)
    return true
  }

  async insert(tasks: readonly Task[], reason: string): Promise<Task[]> {
    return this.insertMany(tasks, reason)
  }

  cached(id: string): Task | undefined {
    return this.copies.get(id)?.task
  }

  async get(id: string): Promise<Task | undefined> {
    return parse(this.statements.get!.get(id))
  }

  async getMany(ids: readonly string[]): Promise<Task[]> {
    return ids.map((id) => parse(this.statements.get!.get(id))).filter((task): task is Task => task !== undefined)
  }

  async list(filter: TaskListFilter): Promise<TaskPage> {
    const limit = Math.min(Math.max(filter.limit ?? 50, 1), 500)
    const newest = filter.order === 'newest'
    const clauses = ['tenant = ?', newest ? 'seq < ?' : 'seq > ?']
    const params: unknown[] = [filter.tenant, Number(filter.cursor ?? 0) || (newest ? Number.MAX_SAFE_INTEGER : 0)]
    if (filter.state) (clauses.push('state = ?'), params.push(filter.state))
    if (filter.intentId) (clauses.push('intent_id = ?'), params.push(filter.intentId))
    const rows = this.db
      .prepare(`SELECT seq, body FROM tasks WHERE ${clauses.join(' AND ')} ORDER BY seq ${newest ? 'DESC' : 'ASC'} LIMIT ?`)
      .all(...params, limit + 1) as { seq: number; body: string }[]
    const page = rows.slice(0, limit)
    return { tasks: page.map((row) => parse(row)!), ...(rows.length > limit ? { nextCursor: String(page[page.length - 1]!.seq) } : {}) }
  }

  async transition(id: string, from: readonly TaskState[], change: TaskChange): Promise<TransitionOf | undefined> {
    let moved: TransitionSteps | undefined
    try {
      moved = this.transitionMany(id, from, [change], true)
    } finally {
      // Rolled back (it threw): the dependents it started were not, their slots given back.
      if (!moved) for (const { start } of this.startedInside.splice(0)) start.release()
    }
    const started = this.startedInside.splice(0).map(({ start, steps }) => ({ id: steps.task.id, begin: () => start.begin(steps) }))
    return (
      moved && {
        task: moved.task,
        event: moved.steps[0]!.event,
        ...(moved.dependents ? { dependents: moved.dependents } : {}),
        ...(started.length ? { started } : {}),
      }
    )
  }

  async transitions(id: string, from: readonly TaskState[], changes: readonly TaskChange[]): Promise<TransitionSteps | undefined> {
    return this.transitionMany(id, from, changes)
  }

  async insertAndStart(
    tasks: readonly Task[],
    reason: string,
    now: number,
    start: { id: string; changes: readonly TaskChange[] },
  ): Promise<InsertedTasks> {
    return this.insertStarting(tasks, reason, now, start)
  }

  async update(id: string, state: TaskState, patch: NonNullable<TaskChange['patch']>): Promise<Task | undefined> {
    return this.updateOne(id, state, patch)
  }

  async due(now: number, limit: number): Promise<Task[]> {
    return this.statements.due!.all(now, limit).map((row) => parse(row)!)
  }

  async expired(now: number): Promise<Task[]> {
    return this.statements.expired!.all(now).map((row) => parse(row)!)
  }

  async inStates(states: readonly TaskState[]): Promise<Task[]> {
    return this.db
      .prepare(`SELECT body FROM tasks WHERE state IN (${states.map(() => '?').join(', ')}) ORDER BY seq`)
      .all(...states)
      .map((row) => parse(row)!)
  }

  async dependentsOf(id: string): Promise<Task[]> {
    return this.dependentRows(id).map((row) => parse(row)!)
  }

  /**
   * Most tasks have no dependent: a one-row look answers that (libsql's `all` steps through an iterator and a
   * 100-slot batch even for no row: ~7 µs against ~2 µs), and only a task that has some reads them.
   */
  private dependentRows(id: string): { seq: number; body: string }[] {
    if (this.statements.hasDependents!.get(id) === undefined) return []
    return this.statements.dependents!.all(id) as { seq: number; body: string }[]
  }

  /**
   * Inside the write of `ended`'s completion: each dependent it makes ready (pending, not ready, every dependency of
   * its tenant's completed), due and first in the due order, that the scheduler takes on here (startInside: a slot,
   * no preparation), is made ready, claimed and started in this same write, in the due order; from the first one not
   * started, none (a dependent made ready now never overtakes another). The readiness is a field write over the
   * claim's row; the log shows the claim and the start as any claim's. Those left are made ready as usual after it.
   */
  private startDependents(ended: Task, rows: readonly { seq: number; body: string }[]): void {
    const now = Date.now()
    for (const row of rows) {
      const dependent = parse(row)!
      if (dependent.tenant !== ended.tenant || dependent.state !== 'PENDING' || dependent.ready) continue
      const inputs = dependent.dependencies.map((id) => (id === ended.id ? ended : parse(this.statements.get!.get(id))))
      if (!inputs.every((input) => input?.tenant === dependent.tenant && input.state === 'COMPLETED')) continue
      const ready: Task = { ...dependent, ready: true }
      const { priority } = dependent
      if (ready.notBefore > now || this.statements.ahead!.get(priority, now, priority, row.seq) !== undefined) return
      const start = this.startInside!(ready, inputs as Task[], ended)
      if (!start) return
      const steps = start.changes.every((change) => holdsFor(ready, change))
        ? this.applySteps(ready, start.changes, (task) => this.write(task))
        : undefined
      if (!steps) return start.release()
      this.startedInside.push({ start, steps })
    }
  }

  async events(id: string, afterSeq = 0): Promise<TaskEvent[]> {
    return (this.statements.events!.all(id, afterSeq) as EventRow[]).map(eventFrom)
  }

  /** Up to LOGS_READ_TOGETHER logs a statement, each term an index range: a plan's 3 steps' logs in ~1/3 of the time. */
  async eventsOfMany(afterSeq: ReadonlyMap<string, number>): Promise<Map<string, TaskEvent[]>> {
    const logs = new Map([...afterSeq.keys()].map((id) => [id, [] as TaskEvent[]]))
    const reads = [...afterSeq]
    for (let start = 0; start < reads.length; start += LOGS_READ_TOGETHER) {
      const chunk = reads.slice(start, start + LOGS_READ_TOGETHER)
      let statement = this.logReads.get(chunk.length)
      if (!statement) {
        const terms = chunk.map(() => '(task_id = ? AND seq > ?)').join(' OR ')
        this.logReads.set(chunk.length, (statement = this.db.prepare(`SELECT * FROM task_events WHERE ${terms} ORDER BY seq`)))
      }
      for (const row of statement.all(chunk.flat()) as EventRow[]) logs.get(row.task_id)!.push(eventFrom(row))
    }
    return logs
  }

  async close(): Promise<void> {
    this.db.close()
  }
}
