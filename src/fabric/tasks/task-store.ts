import type { Task, TaskEvent, TaskState } from './task-types'

/**
 * Where tasks live. The store only keeps and finds tasks and makes each transition atomic (compare-and-set on the
 * state, with its action-log entry in the same write); every rule (what is ready, retries, deadlines, the failure
 * table) lives above it in the scheduler, so every store behaves the same.
 */

export interface TaskListFilter {
  tenant: string
  state?: TaskState
  intentId?: string
  /** @default 50 */
  limit?: number
  /** The `nextCursor` of the previous page. */
  cursor?: string
  /** Submission order (`oldest` first, the default), or `newest` first (a console's live list). */
  order?: 'oldest' | 'newest'
}

export interface TaskPage {
  tasks: Task[]
  /** Present when more tasks follow. */
  nextCursor?: string
}

/** One transition: the new state, why, and the fields that change with it. */
export interface TaskChange {
  to: TaskState
  reason: string
  patch?: Partial<Pick<Task, 'attempts' | 'notBefore' | 'result' | 'outputFiles' | 'request' | 'ready' | 'owner'>>
  /**
   * Only while this holder's attempt still holds the task: a run's end written by a process whose hold lapsed (its
   * lease ran out, the task went to another process) is dropped like a lost race, so it cannot settle the new run.
   */
  heldBy?: { owner: string; attempt: number }
  /**
   * Only while the task is still ready, due at `now` and at this attempt count: a claim counts its attempt from a copy
   * of the task (the announcement's, the readiness write's) that may be stale, and must land only on the task it
   * counted from. The store checks it on the task as stored, in the same atomic write.
   */
  claimOf?: { attempts: number; now: number }
}

/** Whether a change's conditions (its holder, the attempt it claims from), if any, hold for the task as stored. */
export function holdsFor(task: Task, change: TaskChange): boolean {
  const { heldBy, claimOf } = change
  if (heldBy && !(task.owner === heldBy.owner && task.attempts === heldBy.attempt)) return false
  return !claimOf || (task.attempts === claimOf.attempts && task.ready && task.notBefore <= claimOf.now)
}

/** The task after one change written at `at`: the one step every store takes for each change (and the scheduler, ahead). */
export function afterChange(task: Task, change: TaskChange, at: string): Task {
  return { ...task, ...change.patch, state: change.to, reason: change.reason, updatedAt: at }
}

/** What `transitions` answers: the task at the end, and each step's event with the task as it stood after that step. */
export interface TransitionSteps {
  task: Task
  steps: { event: TaskEvent; task: Task }[]
  /**
   * When the transitions ended the task: its dependents as they stood at that write, read in the same one where the
   * store can (a store across the network saves the round trip of `dependentsOf`). Absent: ask `dependentsOf`.
   */
  dependents?: Task[]
  /**
   * Dependents the write made ready and announced right behind it (a store that can: Redis, `announceBehind`), so
   * their announcement landed after their readiness: not announced again.
   */
  announced?: string[]
}

/** What `transition` answers: the task after it, its event, and (as in TransitionSteps) its dependents when it ended. */
export interface TransitionOf {
  task: Task
  event: TaskEvent
  dependents?: Task[]
  announced?: string[]
  /**
   * Dependents its completion made ready, claimed and started in the same atomic write (TaskStore.startInside): each
   * `begin` starts its run here, after the end's own event has been told. Not made ready again.
   */
  started?: { id: string; begin(): void }[]
}

/**
 * A dependent the scheduler of this process takes on inside its dependency's end write (TaskStore.startInside): the
 * claim and start to apply over it (made ready), then `begin` once that write has committed with them, or `release`
 * (its slot given back) when it did not.
 */
export interface InsideStart {
  changes: readonly TaskChange[]
  begin(started: TransitionSteps): void
  release(): void
}

/**
 * Asked by a store that can start a dependent inside the write of its dependency's end (SQLite: one transaction), for
 * each dependent that completion makes ready, due and first in the due order: `inputs` its dependencies as read
 * there, `ending` the task that completed. Undefined (a synchronous answer, no slot or no start here) leaves it to
 * be made ready and announced as usual.
 */
export type StartInside = (task: Task, inputs: readonly Task[], ending: Task) => InsideStart | undefined

/**
 * Starts a dependent in the process that wrote its dependency's end, right behind that end (TaskStore.startHere), or
 * answers undefined at once when this process will not (no free slot, stopping): it is announced as usual then.
 * `inputs` are its dependencies as ended; `ending` the run here whose end made it ready, if any (its slot is free
 * soon); `makeReady`: the task is as known, not ready yet, and is written ready in the same send (startBehind).
 */
export type StartHere = (
  task: Task,
  inputs: readonly Task[],
  ending: Task | undefined,
  makeReady?: boolean,
) => Promise<TransitionSteps | undefined> | undefined

/**
 * What `insertAndStart` answers: the tasks as submitted (or those their idempotency keys found), and the start of the
 * one it was to start, if it started.
 */
export interface InsertedTasks {
  tasks: Task[]
  started?: TransitionSteps
}

export interface TaskStore {
  /**
   * Inserts the tasks and their first events in one atomic write. A task whose tenant already has a task with its
   * idempotency key is not inserted: the existing task is returned in its place.
   */
  insert(tasks: readonly Task[], reason: string): Promise<Task[]>
  /**
   * Optional: inserts the tasks as `insert` does and, in the same atomic write, applies `start.changes` to the task
   * `start.id` when it is the first due task at `now` (no due task ahead of it in the due order, the batch's own
   * inserted before it included), so a submit that finds a free slot stores and starts its first run with one commit.
   * Without `started` when it did not start (another task was due first, or the idempotency key found an existing
   * task, which is answered instead).
   */
  insertAndStart?(
    tasks: readonly Task[],
    reason: string,
    now: number,
    start: { id: string; changes: readonly TaskChange[] },
  ): Promise<InsertedTasks>
  get(id: string): Promise<Task | undefined>
  getMany(ids: readonly string[]): Promise<Task[]>
  list(filter: TaskListFilter): Promise<TaskPage>
  /**
   * Moves a task to `change.to` only if its state is one of `from`, appending the action-log entry in the same
   * atomic write. Undefined when the task was not in one of those states (another process or call got there first).
   */
  transition(id: string, from: readonly TaskState[], change: TaskChange): Promise<TransitionOf | undefined>
  /**
   * Optional: several transitions in a row (the first from one of `from`, each next from the one before it) in one
   * atomic write, every one with its action-log entry: all or none. `steps` holds each event with the task as it
   * stood after it. The scheduler uses it to claim and start a run that needs no preparation in one commit; a store
   * without it gets the transitions one by one.
   */
  transitions?(id: string, from: readonly TaskState[], changes: readonly TaskChange[]): Promise<TransitionSteps | undefined>
  /**
   * Optional: the task as this store last read or wrote it, without a read; it may be stale (another process moved
   * the task since). The scheduler claims an announced task on it: the claim's compare-and-set and its `claimOf`
   * check make a stale copy cost only the read it would have made anyway.
   */
  cached?(id: string): Task | undefined
  /**
   * Optional (a store whose writes are round trips: Redis): claims and starts `expected` with `changes` right behind a
   * write of this store sent just before, not yet answered, that leaves the task stored exactly so (or, `makeReady`,
   * writes the task ready over the copy the store knows, in the same send); the run holds a
   * lease in the store (no dispatcher's job holds it), which this process renews and any process's `lapsedRuns` takes
   * once it lapses. Undefined when the task was not stored so: nothing started.
   */
  startBehind?(task: Task, changes: readonly TaskChange[], makeReady?: boolean): Promise<TransitionSteps | undefined>
  /**
   * Optional, with `startBehind`: set by the scheduler of this process. An end's write that makes dependents ready
   * calls it for each, in the same turn as the write is sent: a dependent it starts is claimed behind that write.
   */
  startHere?: StartHere
  /**
   * Optional: set by the scheduler of this process where no dispatcher hands out runs. A store whose end write can
   * start a dependent in the same atomic write (SQLite) asks it for each dependent a completion makes ready.
   */
  startInside?: StartInside
  /** Optional, with `startBehind`: runs started so whose lease lapsed, each answered to one caller, still so held. */
  lapsedRuns?(now: number): Promise<Task[]>
  /** Updates fields that are not a transition (readiness), only while the task is in `state`. */
  update(id: string, state: TaskState, patch: NonNullable<TaskChange['patch']>): Promise<Task | undefined>
  /** Ready PENDING tasks whose backoff has passed, in the one due order (due-order.ts): priority, then submission. */
  due(now: number, limit: number): Promise<Task[]>
  /** PENDING tasks never started whose start-by deadline is before `now`. */
  expired(now: number): Promise<Task[]>
  inStates(states: readonly TaskState[]): Promise<Task[]>
  dependentsOf(id: string): Promise<Task[]>
  /** The task's action log in order, after `afterSeq`. */
  events(id: string, afterSeq?: number): Promise<TaskEvent[]>
  /**
   * Optional: several tasks' logs in one read, each in order after its own seq (`afterSeq`, by task id); a task with no
   * such event answers an empty log. A plan's look reads its steps' logs so; a store without it is asked task by task.
   */
  eventsOfMany?(afterSeq: ReadonlyMap<string, number>): Promise<Map<string, TaskEvent[]>>
  close(): Promise<void>
}

/** What a service beside the tasks (the plan engine) reads of them: tasks by id and their action logs, nothing it could change. */
export type TaskReader = Pick<TaskStore, 'getMany' | 'events' | 'eventsOfMany'>
