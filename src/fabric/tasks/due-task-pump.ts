import { describeError } from '../../core'
import type { Logger } from '../../observability/logger'
import type { TaskStore } from './task-store'
import type { Task } from './task-types'

/** What the pump asks of its scheduler. */
export interface DueTaskPumpHost {
  store: Pick<TaskStore, 'due'>
  logger?: Logger | undefined
  /** Whether this process looks for due tasks itself now: started, and no dispatcher hands them out. */
  looks(): boolean
  /** Slots free for runs now. */
  freeSlots(): number
  /** Claims and starts a due task; undefined when another process or call claimed it first. */
  claim(task: Task): Promise<unknown>
}

/**
 * A process's look for due tasks on a store with no dispatcher: starts due tasks, by priority, while slots are free.
 * One look at a time; a wake meanwhile looks once more after it.
 */
export class DueTaskPump {
  private pumping: Promise<void> | undefined
  private again = false
  /**
   * Whether a task may be due that this process has not seen: the last look for due tasks filled every free slot,
   * or a wake found no slot free to look with. A run's end looks only then: a look that found fewer due tasks than
   * it had slots for saw every one, and a task due since is announced here (a wake) or, another process's, found
   * at the next tick (one due-task query a trivial task fewer).
   */
  private mayBeDue = true

  constructor(private readonly host: DueTaskPumpHost) {}

  /** Whether a look is in flight (the scheduler's stop waits for it). */
  get busy(): boolean {
    return this.pumping !== undefined
  }

  /** A run's slot came free: looks only when a task may be due that this process has not seen (`mayBeDue`). */
  slotFreed(): void {
    if (this.mayBeDue) this.wake()
  }

  /** Starts due tasks while slots are free; one pump at a time, re-run when woken meanwhile. */
  wake(): void {
    if (!this.host.looks()) return
    if (this.pumping) {
      this.again = true
      return
    }
    this.pumping = this.pump()
      .catch((error: unknown) => {
        // The store failing for a moment: the next tick looks again (an unhandled rejection would end the process).
        this.mayBeDue = true
        this.host.logger?.error({ err: describeError(error) }, 'task scheduler pump failed; the next tick tries again')
      })
      .finally(() => {
        this.pumping = undefined
        if (this.again) ((this.again = false), this.wake())
      })
  }

  private async pump(): Promise<void> {
    while (this.host.looks()) {
      const free = this.host.freeSlots()
      if (free <= 0) {
        this.mayBeDue = true
        return
      }
      const due = await this.host.store.due(Date.now(), free)
      this.mayBeDue = due.length >= free
      if (due.length === 0) return
      let started = 0
      for (const task of due) if (await this.host.claim(task)) started++
      // Fewer due than free slots: nothing else was due, no need to ask again (a task due later wakes the pump itself).
      if (started === 0 || due.length < free) return
    }
  }
}
