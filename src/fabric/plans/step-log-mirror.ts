import { isFinal, type Task, type TaskEvent, type TaskReader, type TaskState } from '../tasks'
import type { PlanStore } from './plan-store'
import type { NewStepEvent, PlanEvent } from './plan-types'

/** Steps' logs read ahead of a mirror, by task id (StepLogMirror.readAhead). */
export type ReadAhead = ReadonlyMap<string, TaskEvent[]>

/**
 * Copies the transitions of a plan's step tasks from the task store's action log into the plan's own log, so one
 * ordered log (and one SSE stream) holds the plan's and its steps' transitions. A task's log is read on from the last
 * event copied; a task whose state and time have not changed since it was last looked at is not read at all, so
 * looking at a whole plan costs nothing for steps that did not move. Copies are idempotent (the store skips an event
 * already copied), so two processes may mirror the same plan.
 */
export class StepLogMirror {
  private readonly plans = new Map<string, { upTo: Map<string, number>; seen: Map<string, string> }>()

  constructor(
    private readonly store: PlanStore,
    private readonly tasks: TaskReader,
    private readonly announce: (events: readonly PlanEvent[]) => void,
  ) {}

  /** A plan just made here: nothing of it is mirrored yet, so its first mirror reads no record of what was. */
  started(planId: string): void {
    if (!this.plans.has(planId)) this.plans.set(planId, { upTo: new Map(), seen: new Map() })
  }

  /**
   * Reads ahead the logs of these steps of `planId` (those not seen ended), to be called just after their tasks were
   * asked for (so each log holds at least what brought its task to the state read); `mirror` given the same read's
   * tasks uses them (on a store across the network, the logs come in the tasks' round trip). Undefined before the
   * plan's first mirror here.
   */
  readAhead(planId: string, taskIds: readonly string[]): Promise<ReadAhead> | undefined {
    const state = this.plans.get(planId)
    if (!state) return undefined
    const ids = taskIds.filter((id) => {
      const seen = state.seen.get(id)
      return !seen || !isFinal(seen.slice(0, seen.indexOf('|')) as TaskState)
    })
    return this.readLogs(ids, state.upTo)
  }

  /** The logs of these tasks after what was copied of each: in one read where the task store can (eventsOfMany). */
  private async readLogs(ids: readonly string[], upTo: ReadonlyMap<string, number>): Promise<Map<string, TaskEvent[]>> {
    if (ids.length > 1 && this.tasks.eventsOfMany) return this.tasks.eventsOfMany(new Map(ids.map((id) => [id, upTo.get(id) ?? 0])))
    const logs = await Promise.all(ids.map((id) => this.tasks.events(id, upTo.get(id) ?? 0)))
    return new Map(ids.map((id, index) => [id, logs[index]!]))
  }

  /**
   * Copies what is new in these tasks' logs (steps of `planId`), in the order the task store logged it. `ahead`: logs
   * read ahead (readAhead) just after these tasks; the others are read now.
   */
  async mirror(planId: string, tasks: Iterable<Task>, ahead?: ReadAhead): Promise<void> {
    const fresh = await this.fresh(planId, tasks, ahead)
    if (fresh.length > 0) this.announce(await this.store.mirror(planId, fresh))
  }

  /**
   * What `mirror` would copy, counted as copied from now on: the caller writes it (with the plan's own write, where
   * the store makes both one: PlanStore.mirrorAndUpdate) and announces what the store answers.
   */
  async fresh(planId: string, tasks: Iterable<Task>, ahead?: ReadAhead): Promise<NewStepEvent[]> {
    let state = this.plans.get(planId)
    if (!state) this.plans.set(planId, (state = { upTo: await this.store.mirrored(planId), seen: new Map() }))
    const { upTo, seen } = state
    const moved = [...tasks].filter((task) => {
      const { stepId, planVersion } = task.provenance ?? {}
      return stepId && planVersion && seen.get(task.id) !== `${task.state}|${task.updatedAt}`
    })
    // Read after the tasks: each log holds at least what brought its task to the state it was read in. The logs are
    // read at once (on a store across the network, one round trip for all of them).
    // A log read ahead may hold events copied since (a reader's catch-up): the store skips those.
    const unread = await this.readLogs(
      moved.filter((task) => !ahead?.has(task.id)).map((task) => task.id),
      upTo,
    )
    const logs = moved.map((task) => ahead?.get(task.id) ?? unread.get(task.id)!)
    const fresh: NewStepEvent[] = moved.flatMap((task, index) => {
      seen.set(task.id, `${task.state}|${task.updatedAt}`)
      const { stepId, planVersion } = task.provenance!
      return logs[index]!.map((event) => ({
        type: 'step' as const,
        at: event.at,
        version: planVersion!,
        stepId: stepId!,
        taskId: task.id,
        from: event.from,
        to: event.to,
        reason: event.reason,
        attempt: event.attempt,
        taskSeq: event.seq,
      }))
    })
    fresh.sort((a, b) => a.taskSeq - b.taskSeq)
    for (const event of fresh) upTo.set(event.taskId, Math.max(upTo.get(event.taskId) ?? 0, event.taskSeq))
    return fresh
  }

  /** The plan ended: nothing of it needs remembering. */
  forget(planId: string): void {
    this.plans.delete(planId)
  }
}
