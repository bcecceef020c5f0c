import type { ExecutionErrorInfo, ExecutionStatus, OutputStream } from '../../src/core'
import type { PreparedSource } from './prepare-source'

/** Messages between the adapter (main thread) and a QuickJS worker. Everything crosses as structured clones. */

/** Flags the main thread sets in a SharedArrayBuffer, read by the worker's interrupt handler. */
export const FLAG_CANCEL = 0

export interface RunJob {
  type: 'run'
  id: number
  source: PreparedSource
  memoryBytes: number
  stackBytes: number
  /** Milliseconds the run may take from when the worker receives the job. */
  remainingMs: number
  timeoutMs: number
  outputBytes: number
  hostFunctions: { name: string }[]
}

export interface HostCallAnswer {
  type: 'hostResult'
  callId: number
  ok: boolean
  value?: unknown
  error?: { code?: string; message: string }
}

export type ToWorker = RunJob | HostCallAnswer

export interface OutputMessage {
  type: 'output'
  id: number
  chunks: [OutputStream, string][]
}

export interface HostCallMessage {
  type: 'hostCall'
  id: number
  callId: number
  name: string
  args: unknown[]
}

export interface ResultMessage {
  type: 'result'
  id: number
  status: ExecutionStatus
  value?: unknown
  error?: ExecutionErrorInfo
  wallMs: number
}

export interface ReadyMessage {
  type: 'ready'
}

export type FromWorker = OutputMessage | HostCallMessage | ResultMessage | ReadyMessage
