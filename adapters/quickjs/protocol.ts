import type { HostResultMessage } from '../../src/runtime'
import type { PreparedSource } from './prepare-source'

/** The job the quickjs adapter posts to a worker; everything else is the shared job protocol (src/core). */
export interface RunJob {
  type: 'run'
  id: number
  source: PreparedSource
  memoryBytes: number
  stackBytes: number
  /** The worker's WebAssembly memory may not grow past this (its module is loaded with it as the maximum). */
  linearMemoryMaxBytes: number
  /** After a run that left the WebAssembly memory larger than this, the worker loads a fresh module. */
  recycleAboveBytes: number
  /** Milliseconds the run may take from when the worker receives the job. */
  remainingMs: number
  timeoutMs: number
  outputBytes: number
  /** The policy's limits on `display()` items. */
  maxOutputs: number
  outputsBytes: number
  hostFunctions: string[]
  /** For a call in a session: scripts restoring its state, and the capture script to run after a success. */
  session?: { restore: string[]; capture: string }
}

export type ToWorker = RunJob | HostResultMessage
