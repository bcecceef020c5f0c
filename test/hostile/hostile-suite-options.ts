import type { CodeExecutionAdapter, ExecutionRequest, ExecutionResult } from '../../src/core'
import type { ExecuteOptions } from '../../src/execution/types'
import type { HostileCase, HostileExpect } from './corpus'

/** What a hostile suite runs against and how (hostile-runner.ts), and the canaries its payloads look for. */

/** The service, or anything with its `execute` (an Execgate from createExecgate). */
export interface HostileTarget {
  execute(request: ExecutionRequest, options?: ExecuteOptions): Promise<ExecutionResult>
  closeSession?(sessionId: string): Promise<boolean>
  /**
   * The execgate's adapters: a case the service's static check refuses (an `__import__` call, a forbidden module)
   * is also sent to the adapter itself, so the backend meets every payload, not only the check in front of it.
   */
  adapters(): readonly CodeExecutionAdapter[]
}

export interface HostileSuiteOptions {
  /** The adapter under test; every request pins it. */
  adapter: string
  /** The language the requests carry; `typescript` runs the JavaScript cases as TypeScript. */
  language: HostileCase['language'] | 'typescript'
  /** The execgate the cases run through (see `ownExecgate`). */
  target: () => Promise<HostileTarget>
  /** Disposes the target after the suite. */
  dispose?: () => Promise<void>
  /** Whether the adapter offers host functions; if so the runner supplies read_file, write_file and hostFn. */
  hostFunctions: boolean
  /**
   * Runs every case in a session of its own (an adapter's session path can differ from its plain one): the
   * follow-up run goes to the same session, the isolation probe to another, and both are closed after the case.
   */
  sessions?: boolean
  /** Cases that cannot apply, by id, with the reason (printed in the test name). */
  notApplicable?: Record<string, string>
  /**
   * Expectations that differ on this adapter, by case id: what replaces the case's own `expect` keys, and why (shown
   * in the test's name). For a backend whose truthful answer differs (real bash exits 0 after backgrounding a fork
   * bomb that its namespace then kills), never to excuse an effect: the containment keys stay.
   */
  adjusted?: Record<string, { expect: Partial<HostileExpect>; reason: string }>
  /** Per-case Jest timeout. @default 30000 */
  caseTimeoutMs?: number
  /**
   * Command lines of processes the adapter keeps on purpose (its warm pool, replacements of killed members);
   * they are not leftovers of a case. Anything else that outlives a run is.
   */
  poolProcess?: RegExp
}

export const CANARY_FILE = '/tmp/hostile_canary'
export const ENV_CANARY = 'HOSTILE_ENV_CANARY_VALUE'
