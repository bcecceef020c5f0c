import type { Task, TaskReader } from '../tasks'
import { currentVersion } from './plan-revision'
import type { PlanStore } from './plan-store'
import { isPlanFinal, type Plan } from './plan-types'
import type { ReadAhead, StepLogMirror } from './step-log-mirror'

/** How many plans' step task ids the engine keeps from its last look (plans not ended; a few ids each). */
const LOOKS_KEPT = 4096

/** The step task ids of the plan's current and previous version, once each. */
export function stepTaskIds(plan: Plan): string[] {
  return [...new Set(plan.versions.slice(-2).flatMap((version) => version.steps.map((step) => step.taskId)))]
}

/** A plan as one look found it: with its steps' tasks, and their logs when they were read ahead beside them. */
export interface PlanLook {
  plan: Plan
  tasks: Map<string, Task>
  logs?: ReadAhead | undefined
}

/**
 * The engine's reads of a plan and its steps' tasks. Each plan not ended keeps its step task ids as its last look
 * here found them, so the next look reads them beside the plan (on a store across the network, one round trip), and
 * the plan as last seen here (looked at, submitted or written by this engine).
 */
export class PlanLooks {
  private readonly lookedAt = new Map<string, { ids: string[]; plan: Plan }>()

  constructor(
    private readonly store: PlanStore,
    private readonly taskStore: TaskReader,
    private readonly steps: StepLogMirror,
  ) {}

  /** The tasks of the current and the previous version (what may still change or still need mirroring). */
  tasksOf(plan: Plan): Promise<Map<string, Task>> {
    return this.readTasks(stepTaskIds(plan))
  }

  async readTasks(ids: readonly string[]): Promise<Map<string, Task>> {
    return new Map((await this.taskStore.getMany(ids)).map((task) => [task.id, task]))
  }

  /**
   * The plan and its tasks (tasksOf), the tasks read beside the plan when their ids are the ones its last look found
   * (on a store across the network, one round trip for both); after it when a version came or went meanwhile.
   */
  async look(id: string): Promise<PlanLook | undefined> {
    const guessed = this.lookedAt.get(id)?.ids
    // The steps' logs asked for after their tasks (StepLogMirror.readAhead): one round trip on Redis for all three.
    const [plan, tasks, logs] = await Promise.all([
      this.store.get(id),
      guessed && this.readTasks(guessed),
      guessed && this.steps.readAhead(id, guessed),
    ])
    const ids = plan && stepTaskIds(plan)
    this.lookedAt.delete(id)
    if (!plan || !ids) return undefined
    this.remember(plan)
    const same = guessed !== undefined && guessed.length === ids.length && ids.every((taskId, index) => guessed[index] === taskId)
    return tasks && same ? { plan, tasks, logs } : { plan, tasks: await this.readTasks(ids) }
  }

  /** The plan as seen here (its step task ids, for its next look to read beside it); an ended one is forgotten. */
  remember(plan: Plan): void {
    const { id } = plan
    this.lookedAt.delete(id)
    if (isPlanFinal(plan.state)) return
    this.lookedAt.set(id, { ids: stepTaskIds(plan), plan })
    // Plans ended elsewhere are never looked at here again: the oldest go first (a Map iterates in insertion order).
    if (this.lookedAt.size > LOOKS_KEPT) this.lookedAt.delete(this.lookedAt.keys().next().value!)
  }

  /**
   * Whether the task's end (it completed) leaves its plan nothing to decide, as the plan was last seen here: RUNNING,
   * with a step of its current version that depends on the task's step. That step cannot have run yet, so the plan
   * cannot have completed, and a completion is no failure. Every other end (a failure, a last step, a plan seen in
   * another state or not at all) is looked at. A plan moved since by another node is kicked by that node's write or
   * by the engine's tick, as any plan.
   */
  waitedOn(planId: string, task: Task): boolean {
    const plan = this.lookedAt.get(planId)?.plan
    if (task.state !== 'COMPLETED' || plan?.state !== 'RUNNING') return false
    const steps = currentVersion(plan).steps
    const step = steps.find((record) => record.taskId === task.id)
    return step !== undefined && steps.some((record) => record.dependsOn?.includes(step.id))
  }

  /**
   * The plan as this engine last submitted, looked at or wrote it, not ended; undefined during a look (it is read
   * then) or when it was not seen here. Another node's writes are not in it.
   */
  seen(id: string): Plan | undefined {
    return this.lookedAt.get(id)?.plan
  }

  /** A plan ended here: nothing of it is looked at again (a late look finds it ended). */
  forget(id: string): void {
    this.lookedAt.delete(id)
  }
}
