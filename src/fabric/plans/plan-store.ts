import type { NewPlanEvent, NewStepEvent, Plan, PlanEvent, PlanState } from './plan-types'

/**
 * Where plans live. Like the task store it only keeps and finds records and makes each write atomic; the engine's
 * rules live above it. Every write of a plan is a compare-and-set on its `rev`, with its events in the same write.
 */

export interface PlanListFilter {
  tenant: string
  state?: PlanState
  /** @default 50 */
  limit?: number
  /** The `nextCursor` of the previous page. */
  cursor?: string
  /** Submission order (`oldest` first, the default), or `newest` first (a console's live list). */
  order?: 'oldest' | 'newest'
}

export interface PlanPage {
  plans: Plan[]
  /** Present when more plans follow. */
  nextCursor?: string
}

/** What `mirrorAndUpdate` answers: the step events copied (as `mirror`), and the plan's (as `update`) when it landed. */
export interface MirroredUpdate {
  mirrored: PlanEvent[]
  written?: PlanEvent[]
}

export interface PlanStore {
  /** Inserts a new plan (rev 1) and its first events in one atomic write. */
  insert(plan: Plan, events: readonly NewPlanEvent[]): Promise<PlanEvent[]>
  /**
   * Optional: true when a write of the plans' task store called after `insert` (before its answer) lands after the
   * insert: the Redis store sends its inserts on the task store's connection, which runs commands in the order sent.
   * The engine then submits a new plan's steps without waiting for the insert's answer (a round trip sooner to the
   * first step on a store across the network); should the insert fail, the steps that landed are cancelled. The
   * embedded store, which has no round trip to save, does not say so: its steps are submitted once the plan is.
   */
  readonly insertLandsBeforeTasks?: boolean
  get(id: string): Promise<Plan | undefined>
  list(filter: PlanListFilter): Promise<PlanPage>
  /**
   * Writes `plan` (its `rev` one more than the stored one's) with its events, only if the stored plan's rev is still
   * `plan.rev - 1`. Undefined when another write got there first: the caller reads the plan again.
   */
  update(plan: Plan, events: readonly NewPlanEvent[]): Promise<PlanEvent[] | undefined>
  /** Plans not yet ended (RUNNING, REVISING, SUSPENDED), oldest first: what a starting engine picks up. */
  active(): Promise<Plan[]>
  /** Appends step events mirrored from the tasks' action logs; an event already mirrored (same task event) is skipped. */
  mirror(planId: string, events: readonly NewStepEvent[]): Promise<PlanEvent[]>
  /**
   * Optional (a round trip fewer on Redis, a commit fewer on SQLite): `mirror(plan.id, steps)` then
   * `update(plan, events)` as one atomic write. The steps' events are copied whether or not the compare-and-set lands
   * (as `mirror` alone would), and before the plan's own. `written` as `update` answers (undefined: lost). Without it
   * the engine mirrors, then updates.
   */
  mirrorAndUpdate?(plan: Plan, steps: readonly NewStepEvent[], events: readonly NewPlanEvent[]): Promise<MirroredUpdate>
  /** The last task event mirrored into the plan's log, by task id. */
  mirrored(planId: string): Promise<Map<string, number>>
  /** The plan's event log in order, after `afterSeq`. */
  events(planId: string, afterSeq?: number): Promise<PlanEvent[]>
  /**
   * Optional (a store several machines share): hears every plan write by another process, with the plan's id, and
   * every step that moved there (`announceStep`), so a reader on one node follows a plan another node advances, and
   * the driver advances it, without waiting for a tick. What this process wrote or announced is not heard back: the
   * engine here tells its own listeners at once.
   */
  watch?(listener: (planId: string, kind: PlanChangeKind) => void): () => void
  /**
   * Optional, beside `watch`: a step of the plan moved in this process (a worker's run, a cancel): `step` when the
   * plan may have something to decide (decidesPlan: the driver advances it), `moved` when not (readers look).
   */
  announceStep?(planId: string, kind?: Exclude<PlanChangeKind, 'write'>): Promise<void>
  /**
   * Optional (a store several machines share): takes or renews the one plan-driver lease of the deployment for
   * `owner` (true while it holds it). Only the driver advances plans on what it hears and sweeps the active plans;
   * another engine takes over when the driver stops renewing (`fabric.leaseMs`). Without it every engine drives.
   */
  drive?(owner: string, ttlMs: number): Promise<boolean>
  /**
   * Optional (a store several machines share): engine leases, so a plan left REVISING by an engine on another machine
   * is taken over once that engine stops renewing its lease. Without them an owner is judged by its pid on this host.
   */
  heartbeat?(owner: string, ttlMs: number): Promise<void>
  release?(owner: string): Promise<void>
  ownerAlive?(owner: string): Promise<boolean>
  close(): Promise<void>
}

/**
 * What a watched change was: `write`, the plan written (its state, versions); `step`, a step ended or was suspended
 * (the driver advances the plan); `moved`, a step moved with nothing to decide, or steps' transitions were copied
 * into the plan's log (only live readers look).
 */
export type PlanChangeKind = 'write' | 'step' | 'moved'
