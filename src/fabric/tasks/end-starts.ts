import type { RunSlots } from './run-slots'
import { STARTED, claimChange } from './task-runner'
import type { InsideStart, TaskChange, TaskStore, TransitionSteps } from './task-store'
import type { Task } from './task-types'

/** What starting a dependent at its predecessor's end needs of the scheduler. */
export interface EndStartHost {
  store: TaskStore
  slots: RunSlots
  owner: string
  stopped(): boolean
  /** Starts a claimed, started run in its reserved slot (TaskScheduler.begin), `inputs` its dependencies as ended. */
  begin(task: Task, steps: TransitionSteps['steps'], controller: AbortController, inputs: Promise<Task[]>): void
}

/**
 * Dependents started by the end of the run that made them ready, in that run's process, with no pump look or claim
 * of their own: a chain's next step (a plan's) starts at its predecessor's answer. The scheduler hands the store one
 * of the two ways its store can do it (TaskScheduler's constructor).
 */
export class EndStarts {
  constructor(private readonly host: EndStartHost) {}

  /**
   * Starts here a dependent that the end of `ending` (a run here) made ready, claimed behind that end's write, its
   * lease held in the store (TaskStore.startBehind): a chain's next step runs in its predecessor's slot at the end's
   * answer, without a dispatcher's announcement, take and separate claim. Undefined (the store announces it as usual)
   * when this process does not take it on (takeOn).
   */
  startHere(
    ready: Task,
    inputs: readonly Task[],
    ending: Task | undefined,
    makeReady?: boolean,
  ): Promise<TransitionSteps | undefined> | undefined {
    const taken = this.takeOn(ready, ending)
    if (!taken) return undefined
    const { controller, changes } = taken
    const { slots } = this.host
    return this.host.store.startBehind!(ready, changes, makeReady).then(
      (moved) => {
        if (moved) this.host.begin(moved.task, moved.steps, controller, Promise.resolve([...inputs]))
        else slots.release(ready.id, controller)
        return moved
      },
      (error: unknown) => {
        slots.release(ready.id, controller)
        throw error
      },
    )
  }

  /**
   * Takes on a dependent that the completion of `ending` makes ready, inside that completion's write (the store checked
   * it is due and first in the due order): its slot reserved now, its run begun once the write commits (takeOn).
   */
  startInside(ready: Task, inputs: readonly Task[], ending: Task): InsideStart | undefined {
    const taken = this.takeOn(ready, ending)
    if (!taken) return undefined
    const { controller, changes } = taken
    return {
      changes,
      begin: (started) => this.host.begin(started.task, started.steps, controller, Promise.resolve([...inputs])),
      release: () => this.host.slots.release(ready.id, controller),
    }
  }

  /**
   * A dependent made ready by the end of `ending` taken on here (startHere, startInside): its slot reserved, and its
   * claim (counted from this copy) and start. Undefined when this process stops, has no slot (the ending run's, not
   * handed on yet, counts as free), or the run needs preparation, is not due yet or is past its start-by deadline.
   */
  private takeOn(ready: Task, ending: Task | undefined): { controller: AbortController; changes: TaskChange[] } | undefined {
    const now = Date.now()
    if (this.host.stopped() || ready.workspace || ready.notBefore > now || (ready.deadline && Date.parse(ready.deadline) < now))
      return undefined
    if (!this.host.slots.inherit(ending?.id)) return undefined
    const claim: TaskChange = { ...claimChange(ready, this.host.owner), claimOf: { attempts: ready.attempts, now } }
    return { controller: this.host.slots.reserve(ready.id), changes: [claim, STARTED] }
  }
}
