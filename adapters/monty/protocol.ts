import type { HostResultMessage } from '../../src/runtime'
import type { MontyDisplayLimits } from './display'

/** The job the monty adapter posts to a worker; everything else is the shared job protocol (src/core). */
export interface MontyJob {
  type: 'run'
  id: number
  code: string
  limits: { maxDurationSecs: number; maxMemory: number; maxRecursionDepth: number }
  outputBytes: number
  hostFunctions: string[]
  /** The policy's limits on `display()` items, for code that calls it (display.ts); without it the name is unknown. */
  display?: MontyDisplayLimits
  /** After the run, a worker process resident above this asks to be replaced. */
  recycleAboveBytes: number
}

/** Asks the worker to parse code without running it (validate). */
export interface MontyParseJob {
  type: 'parse'
  id: number
  code: string
}

export type ToWorker = MontyJob | MontyParseJob | HostResultMessage
