import type { ExecutionResult } from '../../core'
import type { RetryPolicy, Task, TaskState } from './task-types'

/**
 * The lifecycle's allowed transitions and the seed's failure table, as pure functions, so every store and every
 * process (server, worker) applies the same rules.
 */

/** Every transition the scheduler may make; it never asks the store for another. */
export const TRANSITIONS: Readonly<Record<TaskState, readonly TaskState[]>> = {
  // PENDING → SUSPENDED is a user's suspend before the start; → TERMINATED is cancel, deadline or a failed dependency.
  PENDING: ['SPAWNING', 'SUSPENDED', 'TERMINATED'],
  // SPAWNING → PENDING happens when a start is given up (a dependency check lost a race, a process died).
  SPAWNING: ['RUNNING', 'PENDING', 'TERMINATED', 'FAILED'],
  // RUNNING → PENDING is a retry waiting for its backoff.
  RUNNING: ['COMPLETED', 'FAILED', 'SUSPENDED', 'TERMINATED', 'PENDING'],
  // SUSPENDED → PENDING is a resume; the run starts again from SPAWNING.
  SUSPENDED: ['PENDING', 'TERMINATED', 'COMPLETED'],
  COMPLETED: [],
  FAILED: [],
  TERMINATED: [],
}

export function canTransition(from: TaskState, to: TaskState): boolean {
  return TRANSITIONS[from].includes(to)
}

/** What happens to a task after a run, from the seed's failure table. */
export type RunOutcome =
  | { kind: 'complete' }
  | { kind: 'terminate'; reason: string }
  | { kind: 'suspend'; reason: string }
  | { kind: 'retry'; reason: string; delayMs: number }
  | { kind: 'fail'; reason: string }

/** Delay before attempt `attempt + 1`, given `attempt` runs so far (≥ 1). `random` is injectable for tests. */
export function backoffDelay(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  const raw = policy.backoff === 'linear' ? policy.baseDelayMs * attempt : policy.baseDelayMs * 2 ** (attempt - 1)
  const capped = Math.min(raw, policy.maxDelayMs)
  const jittered = policy.jitter ? capped * (0.8 + 0.4 * random()) : capped
  return Math.round(Math.min(jittered, policy.maxDelayMs))
}

function retryOr(task: Task, kind: 'backend' | 'error', reason: string, random?: () => number): RunOutcome {
  if (task.retryPolicy.retryOn.includes(kind) && task.attempts < task.retryPolicy.maxAttempts) {
    const delayMs = backoffDelay(task.retryPolicy, task.attempts, random)
    return { kind: 'retry', reason: `${reason}; retry ${task.attempts + 1}/${task.retryPolicy.maxAttempts} in ${delayMs} ms`, delayMs }
  }
  const why = task.retryPolicy.retryOn.includes(kind) ? `after ${task.attempts} attempts` : "not retryable by the task's retry policy"
  return { kind: 'fail', reason: `${reason} (${why})` }
}

/**
 * The failure table. `task.attempts` counts the run that produced `result`.
 * - timeout → terminate and log; policy_violation → terminate at once, never retried
 * - memory_limit / output_limit (resource exhaustion) → suspend and notify; resume with other limits or adapter
 * - unavailable / internal_error (a backend's failure) → retry with backoff when `retryOn` has `backend` (the default)
 * - error (the user's own exception) → retry only when `retryOn` has `error`
 */
export function outcomeOf(task: Task, result: ExecutionResult, random?: () => number): RunOutcome {
  const raised = result.error ? `${result.error.type}: ${result.error.message}` : undefined
  const detail = (result.status === 'error' ? raised : undefined) ?? result.message ?? raised ?? result.status
  switch (result.status) {
    case 'ok':
      return { kind: 'complete' }
    case 'timeout':
      return { kind: 'terminate', reason: `timeout: ${detail}` }
    case 'policy_violation':
      return { kind: 'terminate', reason: `policy_violation: ${detail}` }
    case 'memory_limit':
    case 'output_limit':
      return { kind: 'suspend', reason: `resource_exhaustion (${result.status}): ${detail}; resume with other limits or another adapter` }
    case 'unavailable':
    case 'internal_error':
      return retryOr(task, 'backend', `${result.status}: ${detail}`, random)
    case 'error':
      return retryOr(task, 'error', `error: ${detail}`, random)
    case 'cancelled':
      return { kind: 'terminate', reason: 'cancelled' }
    case 'invalid_request':
    case 'not_implemented':
      return { kind: 'fail', reason: `${result.status}: ${detail}` }
  }
}

/**
 * How a run was found lost: its process is gone (a restart's recovery saw its pid dead), or its lease lapsed (the
 * dispatcher handed the task back because that process stopped renewing it: dead, or too busy to renew in time).
 */
export type LostRun = 'process gone' | 'lease lapsed'

/**
 * A run lost with its process (kill -9, power loss) or its lease: a backend crash, so retried by the same policy. The
 * reason names the process that held it, so a run started again can be traced to the process that lost it.
 */
export function outcomeOfLostRun(task: Task, how: LostRun = 'process gone', random?: () => number): RunOutcome {
  const holder = task.owner ? ` (${task.owner})` : ''
  const what = how === 'process gone' ? 'stopped mid-run' : 'stopped renewing its lease (it stopped, or was too busy to renew in time)'
  return retryOr(task, 'backend', `the process running it${holder} ${what}`, random)
}
