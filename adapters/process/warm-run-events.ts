import type { StringDecoder } from 'node:string_decoder'
import type { OutputCapture } from '../../src/core'
import type { ReportChannel } from '../shared/run-report'

/** Output past the limit that is still taken in (and dropped) before the run is stopped for it. */
const OVERFLOW_DRAIN_BYTES = 1024 * 1024

/** One line of the zygote's event stream (fd 3): its readiness, or an event of one run (`id`). */
export interface ZygoteEvent {
  ready?: boolean
  dataKiB?: number
  id?: string
  /** A stream's bytes (`d`, base64): stdout, stderr, or fd 5's records and report. */
  s?: 'o' | 'e' | 'r'
  d?: string
  exit?: number
  closed?: boolean
}

/** A run in flight, as the zygote's events reach it. */
export interface LiveRun {
  output: OutputCapture
  decoders: Record<'o' | 'e', StringDecoder>
  /** fd 5: output records as the code makes them, then the report. */
  report: ReportChannel
  reportBytes: number
  reportLimit: number
  onOverflow: () => void
  /** G closed its streams: the run is over when its report is complete (its exit follows once the kernel is done). */
  closed: () => void
  done: (status: number | null) => void
}

/** Splits the zygote's event stream into its events, one JSON object a line, as its text arrives. */
export function zygoteEventLines(onEvent: (event: ZygoteEvent) => void): (text: string) => void {
  let pending = ''
  return (text) => {
    pending += text
    let newline: number
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline)
      pending = pending.slice(newline + 1)
      onEvent(JSON.parse(line) as ZygoteEvent)
    }
  }
}

/** Passes a run's stream bytes on: fd 5's to its report channel, stdout and stderr to its capture, within limits. */
export function deliverStream(run: LiveRun, event: ZygoteEvent): void {
  const bytes = Buffer.from(event.d ?? '', 'base64')
  if (event.s === 'r') {
    if (run.reportBytes + bytes.length > run.reportLimit) return run.onOverflow()
    run.reportBytes += bytes.length
    run.report.write(bytes)
    return
  }
  const stream = event.s === 'o' ? 'stdout' : 'stderr'
  const text = run.decoders[event.s!].write(bytes)
  if (!run.output.write(stream, text) && run.output.totalBytes > run.output.limitBytes + OVERFLOW_DRAIN_BYTES) run.onOverflow()
}
