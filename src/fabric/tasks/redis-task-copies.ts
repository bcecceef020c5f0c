import { isFinal, type Task } from './task-types'

/** How many tasks' JSON the store keeps as it last read or wrote them (unfinished tasks only: they move again). */
const KNOWN_TASKS = 1024

/** How much ended tasks' JSON the store keeps (characters, all together), and the most for one task. */
const ENDED_CHARS = 4_000_000
const ENDED_CHARS_EACH = 64_000

/**
 * What the Redis task store knows of tasks without a read: each unfinished task's JSON as it last read or wrote it (a
 * compare-and-set is tried on it first), ended tasks' JSON (they never change again), and which unfinished tasks
 * wait on which dependency (what a dependency's end may make ready in its own script).
 */
export class TaskCopies {
  /**
   * Each unfinished task's JSON as this store last read or wrote it. A compare-and-set is tried on it first, without
   * a read: the script compares it with what is stored, so a stale copy (another process moved the task) only costs
   * the read it would have made anyway, and a write lands only on exactly the task it was checked against.
   */
  readonly known = new Map<string, string>()
  /**
   * Ended tasks' JSON as this store read or wrote them. An ended task never changes again, so a read of one is
   * answered from here: a dependency's outputs read by its dependent's claim, the steps of a plan its engine looks at.
   */
  readonly ended = new Map<string, string>()
  private endedChars = 0
  /**
   * Unfinished tasks known here not ready yet, by each dependency they wait on: what that dependency's end may make
   * ready in its own script (readiedBy), checked there against the copy it was made from.
   */
  readonly waiting = new Map<string, Set<string>>()

  remember(task: Task, raw: string): void {
    this.known.delete(task.id)
    if (isFinal(task.state)) return this.keepEnded(task.id, raw)
    this.known.set(task.id, raw)
    // Oldest first out: a Map iterates in insertion order.
    if (this.known.size > KNOWN_TASKS) this.known.delete(this.known.keys().next().value!)
    if (task.ready || task.state !== 'PENDING') return
    for (const dependency of task.dependencies) {
      const dependents = this.waiting.get(dependency) ?? new Set<string>()
      this.waiting.set(dependency, dependents.add(task.id))
      if (this.waiting.size > KNOWN_TASKS) this.waiting.delete(this.waiting.keys().next().value!)
    }
  }

  /**
   * The dependents that `task` completing makes ready, as known here: pending, not ready, of its tenant, every other
   * dependency known ended COMPLETED (for its tenant). Each with the JSON it is known by and its JSON ready (as
   * `update` writes it): the end's script writes the second only over the first, so a dependent moved meanwhile is
   * left to the scheduler's usual look at it (TaskTransitions.afterEnd), as is any dependent not known here.
   */
  readiedBy(task: Task, at: string): { id: string; expected: string; ready: Task }[] {
    if (task.state !== 'COMPLETED') return []
    const completed = (id: string, tenant: string) => {
      const raw = id === task.id ? undefined : this.ended.get(id)
      const ended = raw === undefined ? undefined : (JSON.parse(raw) as Task)
      return id === task.id || (ended?.state === 'COMPLETED' && ended.tenant === tenant)
    }
    return [...(this.waiting.get(task.id) ?? [])].flatMap((id) => {
      const raw = this.known.get(id)
      const dependent = raw === undefined ? undefined : (JSON.parse(raw) as Task)
      if (!dependent || dependent.state !== 'PENDING' || dependent.ready || dependent.tenant !== task.tenant) return []
      if (!dependent.dependencies.includes(task.id) || !dependent.dependencies.every((dependency) => completed(dependency, task.tenant)))
        return []
      return [{ id, expected: raw!, ready: { ...dependent, ready: true, updatedAt: at } }]
    })
  }

  private keepEnded(id: string, raw: string): void {
    if (raw.length > ENDED_CHARS_EACH || this.ended.has(id)) return
    this.ended.set(id, raw)
    this.endedChars += raw.length
    // Oldest first out.
    for (const [oldest, kept] of this.ended) {
      if (this.endedChars <= ENDED_CHARS) break
      this.ended.delete(oldest)
      this.endedChars -= kept.length
    }
  }

  endedTask(id: string): Task | undefined {
    const raw = this.ended.get(id)
    return raw === undefined ? undefined : (JSON.parse(raw) as Task)
  }
}
