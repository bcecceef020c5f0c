import { spawn } from 'node:child_process'
import { performance } from 'node:perf_hooks'
import type { Readable, Writable } from 'node:stream'
import type { OutputCapture } from '../../src/core'
import type { RunController } from '../../src/runtime'
import { ReportChannel } from '../shared/run-report'
import { stopReasonFor, type StopReason } from '../shared/stop-reason'
import { FD } from './runners'

export interface SpawnedRun {
  stoppedFor?: StopReason
  exitCode: number | null
  signal: NodeJS.Signals | null
  /** The runner's JSON report from fd 5, if it wrote one. */
  report: string
  /** The workspace archive from fd 6, when files were collected. */
  filesArchive?: Buffer
  /** True when fd 6 carried more than `archiveLimitBytes` (the archive is cut and its tail entries lost). */
  archiveCut: boolean
  /** Set when the sandbox could not be started at all (bwrap missing, uid switch refused). */
  spawnError?: string
  wallMs: number
}

export interface SpawnOptions {
  file: string
  args: string[]
  uid?: number
  code: string
  filesArchive?: Buffer
  collectFiles: boolean
  stdin?: string
  /** The run's deadline and cancellation (its clock already restarted after any wait); it kills the sandbox. */
  controller: RunController
  output: OutputCapture
  reportLimitBytes: number
  archiveLimitBytes: number
  /** Fed to bwrap on fd 7 (`--seccomp 7`). */
  seccompFilter?: Buffer
  /** Each rich output the runner sends while the code runs, unchecked (the host's OutputCollector checks it). */
  onOutputRecord?: (raw: unknown) => void
}

/**
 * Output past the cap is still read and counted up to this much before the sandbox is killed, so a program that
 * prints one large block and stops gets a true byte count and its own exit, while a flood is stopped within ~1 ms.
 */
const OVERFLOW_DRAIN_BYTES = 1024 * 1024

/** How long after a kill the host waits for the streams to close before it stops waiting (the uid sweep follows). */
const CLOSE_GRACE_MS = 2000

/** Reads a stream up to `limit` bytes into `sink`; past the limit the stream is cut and `onOverflow` called. */
function collect(stream: Readable | null | undefined, limit: number, onOverflow: () => void, sink: (chunk: Buffer) => void): void {
  let bytes = 0
  stream?.on('data', (chunk: Buffer) => {
    if (bytes + chunk.length > limit) {
      sink(chunk.subarray(0, Math.max(0, limit - bytes)))
      bytes = limit + 1
      onOverflow()
      stream.destroy()
      return
    }
    bytes += chunk.length
    sink(chunk)
  })
  stream?.on('error', () => {})
}

function feed(stream: Writable | null | undefined, data: string | Buffer | undefined): void {
  if (!stream) return
  // The program may exit without reading its input: a write to a closed pipe is not an error of the run.
  stream.on('error', () => {})
  stream.end(data ?? '')
  // The extra descriptors are sockets: their read side must be drained too, or the child's 'close' never comes.
  if ('resume' in stream && typeof stream.resume === 'function') (stream as unknown as Readable).resume()
}

/** Starts one sandboxed run and resolves when it has ended and every stream is drained. Never rejects. */
export function spawnSandbox(options: SpawnOptions): Promise<SpawnedRun> {
  const started = performance.now()
  return new Promise((resolve) => {
    const { controller } = options
    let stoppedFor: StopReason | undefined
    let archiveCut = false
    const stdio: Array<'pipe' | 'ignore'> = [
      'pipe',
      'pipe',
      'pipe',
      'pipe',
      options.filesArchive ? 'pipe' : 'ignore',
      'pipe',
      options.collectFiles ? 'pipe' : 'ignore',
      ...(options.seccompFilter ? ['pipe' as const] : []),
    ]
    let child: ReturnType<typeof spawn>
    try {
      child = spawn(options.file, options.args, {
        stdio,
        env: {},
        // Its own process group, so one kill reaches bwrap and whatever is still outside the namespaces.
        detached: true,
        ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
      })
    } catch (error) {
      controller.settle()
      resolve({ exitCode: null, signal: null, report: '', archiveCut, spawnError: String((error as Error).message), wallMs: 0 })
      return
    }
    const kill = (reason: StopReason) => {
      stoppedFor ??= stopReasonFor(reason, options.output)
      try {
        process.kill(-child.pid!, 'SIGKILL')
      } catch {
        // the group is already gone
      }
      closeTimer ??= setTimeout(() => finish(null, 'SIGKILL'), CLOSE_GRACE_MS)
    }
    let closeTimer: NodeJS.Timeout | undefined

    for (const name of ['stdout', 'stderr'] as const) {
      const stream = child.stdio[name === 'stdout' ? 1 : 2] as Readable
      stream.setEncoding('utf8')
      stream.on('data', (text: string) => {
        if (!options.output.write(name, text) && options.output.totalBytes > options.output.limitBytes + OVERFLOW_DRAIN_BYTES)
          controller.stop('output_limit')
      })
      stream.on('error', () => {})
    }
    const streams = child.stdio as unknown as Array<Readable | Writable | null>
    // The report channel: output records while the code runs (each to onOutputRecord at once), then the report.
    const report = new ReportChannel(options.onOutputRecord)
    collect(
      streams[FD.result] as Readable,
      options.reportLimitBytes,
      () => controller.stop('output_limit'),
      (chunk) => report.write(chunk),
    )
    const archive: Buffer[] = []
    collect(
      streams[FD.filesOut] as Readable,
      options.archiveLimitBytes,
      () => (archiveCut = true),
      (chunk) => archive.push(chunk),
    )
    feed(child.stdio[0] as Writable, options.stdin)
    feed(streams[FD.code] as Writable, options.code)
    if (options.filesArchive) feed(streams[FD.filesIn] as Writable, options.filesArchive)
    if (options.seccompFilter) feed(streams[FD.seccomp] as Writable, options.seccompFilter)

    let spawnError: string | undefined
    child.on('error', (error) => {
      spawnError = error.message
      finish(null, null)
    })
    const finish = (exitCode: number | null, signal: NodeJS.Signals | null) => {
      if (!controller.settle()) return
      clearTimeout(closeTimer)
      resolve({
        stoppedFor,
        exitCode,
        signal,
        report: report.end(),
        filesArchive: options.collectFiles ? Buffer.concat(archive) : undefined,
        archiveCut,
        spawnError,
        wallMs: performance.now() - started,
      })
    }
    child.on('close', (code, signal) => finish(code, signal))
    controller.start({ onStop: kill })
  })
}
