import type { Output } from '../../core'

/**
 * A rich output of a task's run (an image, a table, a display() item): `index` is its place in the run's
 * `result.outputs`, which the task keeps with its result. A plan's step carries its plan and step ids.
 */
export interface TaskOutput {
  taskId: string
  attempt: number
  index: number
  output: Output
  planId?: string
  stepId?: string
}

/**
 * Carries the rich outputs of runs between the processes of a deployment, so that a reader of a task's or a plan's
 * events on one node gets, as they are made, the outputs of a run on another (a worker, another serve node). Without
 * one, a reader hears only the runs of its own process (the single-node stores need none).
 */
export interface OutputRelay {
  /** Tells every other process of an output made here. Never throws: a lost message costs a reader a live item. */
  publish(output: TaskOutput): void
  /** Calls `listener` with the outputs other processes publish from now on; returns the way to stop. */
  subscribe(listener: (output: TaskOutput) => void): () => void
  close(): Promise<void>
}
