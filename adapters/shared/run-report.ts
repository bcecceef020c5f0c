import type { ExecutionErrorInfo } from '../../src/core'

/**
 * The runners' report (adapters/shared/interpreter-runners.ts): one JSON document with the value or the error. Where
 * it shares a stream with the code's own output (a container's stdout, a remote session's), it follows this record
 * separator and a per-run nonce, so code that prints one cannot forge a report.
 */
export const RECORD_SEPARATOR = '\x1e'

export interface RunReport {
  ok?: boolean
  value?: unknown
  error?: ExecutionErrorInfo
  /** Rich outputs as the runner made them (python-outputs.ts); the host checks them (acceptOutputs). */
  outputs?: unknown
  /** Outputs the runner left out for the policy's limits. */
  outputsOmitted?: number
}

/** The report's rich outputs, to be checked by the host (src/core/rich-outputs.ts). */
export function reportOutputs(report: RunReport | undefined): { outputs?: unknown; outputsOmitted?: number } {
  if (!report) return {}
  return {
    ...(report.outputs !== undefined ? { outputs: report.outputs } : {}),
    ...(typeof report.outputsOmitted === 'number' ? { outputsOmitted: report.outputsOmitted } : {}),
  }
}

/** The report, or undefined when there is none or it is not one the runner wrote (the caller falls back to the exit). */
export function parseReport(text: string): RunReport | undefined {
  if (!text) return undefined
  try {
    const parsed = JSON.parse(text) as RunReport
    if (parsed.error && (typeof parsed.error.type !== 'string' || typeof parsed.error.message !== 'string')) return undefined
    return parsed
  } catch {
    return undefined // the code wrote over the report itself; fall back to the exit code
  }
}
