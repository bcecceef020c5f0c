import type { EventEmitter } from 'node:events'
import type { TaskDispatcher } from './bullmq-dispatcher'
import { canTransition } from './lifecycle'
import type { TaskChange, TaskStore } from './task-store'
import { isFinal, type Task, type TaskState } from './task-types'

/**
 * A task's transitions as the scheduler makes them: each one written, told to the `transition` listeners, announced
 * when it leaves the task due, and followed by its consequences for the task's dependents (ready, or ended naming it).
 */
export class TaskTransitions {
  constructor(
    private readonly store: TaskStore,
    private readonly emitter: EventEmitter,
    /** A task is due (now or at its notBefore): the dispatcher hands it to a free process, or this one looks. */
    private readonly announce: (task: Task) => Promise<void>,
    private readonly dispatcher: TaskDispatcher | undefined,
  ) {}

  /** One transition, announced, with its consequences for dependents. */
  async move(id: string, from: readonly TaskState[], change: TaskChange): Promise<Task | undefined> {
    // Only transitions the lifecycle draws: a caller asking for another one gets undefined, like a lost race.
    const moved = await this.store.transition(
      id,
      from.filter((state) => canTransition(state, change.to)),
      change,
    )
    if (!moved) return undefined
    try {
      this.emitter.emit('transition', moved.event, moved.task)
    } finally {
      // Dependents its completion started in its own write (the SQLite store's startInside): their runs begin here,
      // their claim and start told after the end, whatever a listener did with it (they hold their slots till then).
      for (const start of moved.started ?? []) start.begin()
    }
    if (moved.task.state === 'PENDING' && moved.task.ready) await this.announce(moved.task)
    // Back to PENDING not ready: a resume of a task whose readiness write found it SUSPENDED (its dependencies may all
    // have completed meanwhile, and no other end of theirs comes to make it ready). Looked at again now.
    else if (moved.task.state === 'PENDING') return (await this.refreshReadiness(moved.task)) ?? moved.task
    if (moved.task.state === 'COMPLETED' || moved.task.state === 'FAILED' || moved.task.state === 'TERMINATED')
      await this.afterEnd(
        moved.task,
        moved.dependents,
        moved.announced,
        moved.started?.map((start) => start.id),
      )
    return moved.task
  }

  /**
   * A finished dependency makes dependents ready, or ends them naming it; `dependents` when its end's write read them,
   * `announced` those of them that write made ready and announced behind itself (TransitionSteps.announced), `started`
   * those it made ready and started (TransitionOf.started): nothing left to do for them.
   */
  async afterEnd(
    task: Task,
    dependents?: readonly Task[],
    announced: readonly string[] = [],
    started: readonly string[] = [],
  ): Promise<void> {
    for (const dependent of dependents ?? (await this.store.dependentsOf(task.id))) {
      if (started.includes(dependent.id)) continue
      // Another tenant's task can name this id only for a task it never got (its batch's task of that id was answered by
      // an idempotency key under another id): nothing of this task (its end, its reason) reaches it.
      if (isFinal(dependent.state) || dependent.tenant !== task.tenant) continue
      // Made ready by the end's own write (the Redis store's, for the dependents it knew): announced, nothing to write.
      if (task.state === 'COMPLETED' && dependent.ready && dependent.state === 'PENDING') {
        if (!announced.includes(dependent.id)) await this.announce(dependent)
      } else if (task.state === 'COMPLETED') await this.refreshReadiness(dependent, task)
      else
        await this.move(dependent.id, ['PENDING', 'SUSPENDED'], {
          to: 'TERMINATED',
          reason: `dependency ${task.id} ${task.state}: ${task.reason}`,
        })
    }
    // No wake here for the slot: a task completes only in a run this scheduler began (dispatched runs included), and
    // the run's end wakes the pump once its slot is free (a wake here too cost a due-task query per task, for nothing).
  }

  /**
   * Makes the task ready when every dependency completed, or ends it when one failed or does not exist for its tenant;
   * answers the task as written then (undefined when nothing was). `ended`: a dependency just read as it ended, so it
   * is not read again.
   */
  async refreshReadiness(task: Task, ended?: Task): Promise<Task | undefined> {
    const known = ended && task.dependencies.includes(ended.id) ? [ended] : []
    // Only the tenant's own tasks count: another tenant's task of a named id is no dependency (see afterEnd).
    const dependencies = [
      ...known,
      ...(await this.store.getMany(task.dependencies.filter((id) => !known.some((dependency) => dependency.id === id)))),
    ].filter((dependency) => dependency.tenant === task.tenant)
    const failed = dependencies.find((dependency) => dependency.state === 'FAILED' || dependency.state === 'TERMINATED')
    if (failed)
      return this.move(task.id, ['PENDING', 'SUSPENDED'], {
        to: 'TERMINATED',
        reason: `dependency ${failed.id} ${failed.state}: ${failed.reason}`,
      })
    // Submission checks every dependency outside the batch exists, and the batch is stored in one write: a missing one
    // is a batch task its idempotency key answered with a task stored earlier under another id. None will ever end.
    const missing = task.dependencies.find((id) => !dependencies.some((dependency) => dependency.id === id))
    if (missing !== undefined)
      return this.move(task.id, ['PENDING', 'SUSPENDED'], {
        to: 'TERMINATED',
        reason: missingDependencyReason(missing, task.tenant),
      })
    if (!everyCompleted(task, dependencies)) return undefined
    const { dispatcher } = this
    if (dispatcher && task.state === 'PENDING') {
      // Made ready by the end of `ended` here: written ready and started here in one send (TaskStore.startHere), no
      // announcement, no take by a dispatcher's worker, no claim after the readiness write's answer. Not started (no
      // slot here, or the copy the store knows is stale): announced below as any ready task.
      const started = ended && (await this.store.startHere?.(task, dependencies, ended, true))
      if (started) return started.task
      // Announced beside the readiness write, not after it: a round trip sooner on a plan's path from one step's end
      // to the next one's start. A process that takes the announcement before the write lands makes the task ready
      // itself, from the same dependencies (runDispatched); an announcement whose write finds the task moved on
      // (cancelled, suspended) is taken and dropped, as any stale one.
      const [ready] = await Promise.all([
        this.store.update(task.id, 'PENDING', { ready: true }),
        dispatcher.dispatch({ ...task, ready: true }),
      ])
      return ready
    }
    const ready = await this.store.update(task.id, task.state, { ready: true })
    if (ready?.state === 'PENDING') await this.announce(ready)
    return ready
  }

  /** A pending task made ready now that every dependency completed (the write refreshReadiness makes); else undefined. */
  async readyByDependencies(task: Task): Promise<Task | undefined> {
    if (!everyCompleted(task, await this.store.getMany(task.dependencies))) return undefined
    const ready = await this.store.update(task.id, 'PENDING', { ready: true })
    return ready?.ready ? ready : undefined
  }
}

/**
 * The reason a task ends with when a dependency it names is no task of its tenant's: a batch task answered by its
 * idempotency key is stored under the id of the task it was answered with, never its own (docs/tasks.md).
 */
export function missingDependencyReason(id: string, tenant: string): string {
  return `dependency ${id} does not exist for tenant ${tenant} (a batch task its idempotency key answered keeps the earlier task's id)`
}

/**
 * Whether `dependencies` (as read) are every one of the task's, all COMPLETED and the task's tenant's own (another
 * tenant's task of a named id is no dependency: afterEnd): what makes a task ready.
 */
function everyCompleted(task: Task, dependencies: readonly Task[]): boolean {
  const own = dependencies.filter((dependency) => dependency.tenant === task.tenant)
  return own.length === task.dependencies.length && own.every((dependency) => dependency.state === 'COMPLETED')
}
