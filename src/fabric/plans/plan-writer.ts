import type { EventEmitter } from 'node:events'
import type { Task } from '../tasks'
import type { PlanLooks } from './plan-looks'
import type { PlanStore } from './plan-store'
import { isPlanFinal, type NewPlanEvent, type NewStepEvent, type Plan, type PlanEvent, type PlanState } from './plan-types'
import type { ReadAhead, StepLogMirror } from './step-log-mirror'

/**
 * The engine's writes of a plan: each a compare-and-set with its events, told to the engine's listeners (`written`
 * with the plan as written, then each `event`), and a plan's end with its steps' last transitions copied first.
 */
export class PlanWriter {
  constructor(
    private readonly store: PlanStore,
    private readonly emitter: EventEmitter,
    private readonly steps: StepLogMirror,
    private readonly looks: PlanLooks,
  ) {}

  /**
   * One compare-and-set write of the plan with its events; undefined when another write got there first. `tasks`: its
   * steps' tasks as the write's caller just read them (told to `onWritten` listeners). `steps`: step events to copy
   * into its log first (StepLogMirror.fresh), copied whether the write lands or not; with the write in one where the
   * store can (PlanStore.mirrorAndUpdate).
   */
  async write(
    plan: Plan,
    patch: Partial<Plan>,
    events: NewPlanEvent[],
    tasks?: ReadonlyMap<string, Task>,
    steps: readonly NewStepEvent[] = [],
  ): Promise<Plan | undefined> {
    const at = new Date().toISOString()
    const next: Plan = { ...plan, ...patch, rev: plan.rev + 1, updatedAt: at }
    for (const key of Object.keys(patch) as (keyof Plan)[]) if (patch[key] === undefined) delete next[key]
    const stamped = events.map((event) => ({ ...event, at: event.at || at }))
    const { store } = this
    let written: PlanEvent[] | undefined
    if (steps.length > 0 && store.mirrorAndUpdate) {
      const both = await store.mirrorAndUpdate(next, steps, stamped)
      this.announce(both.mirrored)
      written = both.written
    } else {
      if (steps.length > 0) this.announce(await store.mirror(plan.id, steps))
      written = await store.update(next, stamped)
    }
    if (!written) return undefined
    this.looks.remember(next)
    // Before the events: a waiter they wake finds the plan as written here.
    this.emitter.emit('written', next, tasks)
    this.announce(written)
    return next
  }

  /**
   * Ends a plan, with its steps' last transitions copied into its log first (so the log's last event is the plan's end).
   * `tasks`, when given, were just read and all ended (nothing of them can be missing from the log once copied), with
   * `logs` read ahead of them (StepLogMirror.readAhead).
   */
  async finish(
    plan: Plan,
    state: PlanState,
    reason: string,
    tasks?: ReadonlyMap<string, Task>,
    logs?: ReadAhead,
  ): Promise<Plan | undefined> {
    for (;;) {
      const seen = tasks ?? (await this.looks.tasksOf(plan))
      const steps = await this.steps.fresh(plan.id, seen.values(), logs)
      tasks = logs = undefined
      const ended = await this.write(
        plan,
        { state, reason, owner: undefined, ...(state === 'COMPLETED' ? { failedStep: undefined } : {}) },
        [{ type: 'plan', at: '', version: plan.version, from: plan.state, to: state, reason }],
        seen,
        steps,
      )
      if (ended) {
        // Ended here: nothing of it is looked at again (a late look finds it ended and copies what is left).
        this.steps.forget(plan.id)
        this.looks.forget(plan.id)
        return ended
      }
      const again = await this.store.get(plan.id)
      if (!again || isPlanFinal(again.state)) return undefined
      plan = again
    }
  }

  /** Copies the steps' task transitions into the plan's log. */
  mirror(plan: Plan, tasks: ReadonlyMap<string, Task>): Promise<void> {
    return this.steps.mirror(plan.id, tasks.values())
  }

  announce(events: readonly PlanEvent[]): void {
    for (const event of events) this.emitter.emit('event', event)
  }
}
