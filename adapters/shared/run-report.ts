import { StringDecoder } from 'node:string_decoder'
import type { ExecutionErrorInfo, ExecutionStatus, OutputCollector } from '../../src/core'

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

/** How an output record starts: `{"output":<item>}` and a newline, sent before the report (RunnerIo.streamOutputs). */
export const OUTPUT_RECORD = '{"output":'

/**
 * The report channel read as it arrives: output records, each handed to `onOutput` the moment its line is complete,
 * then the report (whatever follows them). Once a line is not an output record, everything after it is report text:
 * code that writes to the channel itself garbles the report, as before, and never turns later text into outputs.
 */
export class ReportChannel {
  private readonly decoder = new StringDecoder('utf8')
  private pending = ''
  private reportStarted = false

  constructor(private readonly onOutput?: (raw: unknown) => void) {}

  write(chunk: Buffer | string): void {
    this.pending += typeof chunk === 'string' ? chunk : this.decoder.write(chunk)
    let newline: number
    while (!this.reportStarted && (newline = this.pending.indexOf('\n')) >= 0) {
      const line = this.pending.slice(0, newline)
      if (!line.startsWith(OUTPUT_RECORD)) {
        this.reportStarted = true
        break
      }
      this.pending = this.pending.slice(newline + 1)
      this.onOutput?.(recordOutput(line))
    }
    if (!this.reportStarted && this.pending.length && !OUTPUT_RECORD.startsWith(this.pending.slice(0, OUTPUT_RECORD.length)))
      this.reportStarted = true
  }

  /** The report so far (the channel still open). */
  get reportSoFar(): string {
    return this.reportStarted ? this.pending : ''
  }

  /** The report: what followed the output records. */
  end(): string {
    return this.pending + this.decoder.end()
  }
}

/**
 * A run's outputs as result fields: those the runner streamed while the code ran (already in `collector`), then any
 * its report carried (a runner that sends them at the end), all held to the same limits.
 */
export function collectedOutputs(
  collector: OutputCollector,
  outcome: { status: ExecutionStatus; outputs?: unknown; outputsOmitted?: number },
  adapter: string,
): ReturnType<OutputCollector['fields']> {
  collector.omitByRunner(outcome.outputsOmitted)
  if (Array.isArray(outcome.outputs)) for (const item of outcome.outputs) collector.add(item)
  return collector.fields(outcome.status, adapter)
}

function recordOutput(line: string): unknown {
  try {
    return (JSON.parse(line) as { output?: unknown }).output
  } catch {
    return undefined // a malformed record reaches the collector all the same, which counts it as dropped
  }
}

/**
 * Output records on a stream shared with the code's own output (a container's stdout): `<RS><nonce>{"output":…}`
 * and a newline. `held` is the text from a record separator on; each complete output record at its start goes to
 * `onOutput`, the code's text after it to `forward`, and what is left (from the next separator, or an incomplete
 * record) is returned to be held.
 */
export function takeOutputRecords(held: string, nonce: string, onOutput: (raw: unknown) => void, forward: (text: string) => void): string {
  const marker = RECORD_SEPARATOR + nonce
  while (held.startsWith(marker + OUTPUT_RECORD)) {
    const newline = held.indexOf('\n')
    if (newline === -1) break
    onOutput(recordOutput(held.slice(marker.length, newline)))
    held = held.slice(newline + 1)
    const at = held.indexOf(RECORD_SEPARATOR)
    const text = at === -1 ? held : held.slice(0, at)
    if (text) forward(text)
    held = held.slice(text.length)
  }
  return held
}

/** At the stream's end: complete output records anywhere in `held` (after text the code itself began with a separator) taken out. */
export function takeLateOutputRecords(held: string, nonce: string, onOutput: (raw: unknown) => void): string {
  const start = RECORD_SEPARATOR + nonce + OUTPUT_RECORD
  let at: number
  let from = 0
  while ((at = held.indexOf(start, from)) !== -1) {
    const newline = held.indexOf('\n', at)
    if (newline === -1) break
    onOutput(recordOutput(held.slice(at + start.length - OUTPUT_RECORD.length, newline)))
    held = held.slice(0, at) + held.slice(newline + 1)
    from = at
  }
  return held
}
