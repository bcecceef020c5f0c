import { PassThrough, type Duplex } from 'node:stream'
import type Docker from 'dockerode'
import type { OutputCapture } from '../../src/core'
import type { RunController } from '../../src/runtime'
import { RECORD_SEPARATOR, takeLateOutputRecords, takeOutputRecords } from '../shared/run-report'
import { stopReasonFor, type StopReason } from '../shared/stop-reason'

export interface ContainerOutcome {
  stoppedFor?: StopReason
  exitCode?: number
  oomKilled?: boolean
  /** The runner's report (the text after the nonce), if it wrote one. */
  report: string
  /** Set when the engine refused or failed (create, attach, start): a backend problem, not the code's. */
  engineError?: string
}

/** Output past the cap is still counted up to this much before the container is killed (see the process adapter). */
const OVERFLOW_DRAIN_BYTES = 1024 * 1024

/**
 * stdout as the code wrote it, minus the runner's lines: first `<RS><nonce>ready` (the code starts now), then text
 * after a record separator is held back until the stream ends, and either recognised as `<RS><nonce><report>` or
 * passed on as the code's own.
 */
class ReportFilter {
  private head = ''
  /** Text held after a record separator beyond this is the code's own output, not a report: it is passed on. */
  private readonly heldLimit: number
  private ready = false
  private held = ''
  report = ''
  constructor(
    private readonly nonce: string,
    private readonly forward: (text: string) => void,
    private readonly onReady: () => void,
    reportLimitBytes: number,
    /** Output records (`<RS><nonce>{"output":…}`), taken out as they arrive; without it they stay held. */
    private readonly onOutput?: (raw: unknown) => void,
  ) {
    this.heldLimit = Math.max(4 * 1024 * 1024, reportLimitBytes)
  }
  write(text: string): void {
    if (!this.ready) {
      // The runner writes the ready line before anything else; whatever else comes first is passed on as is.
      this.head += text
      const marker = `${RECORD_SEPARATOR}${this.nonce}ready\n`
      if (this.head.length < marker.length && marker.startsWith(this.head)) return
      this.ready = true
      text = this.head.startsWith(marker) ? this.head.slice(marker.length) : this.head
      this.head = ''
      this.onReady()
      if (!text) return
    }
    if (this.held) {
      this.held += text
    } else {
      const at = text.indexOf(RECORD_SEPARATOR)
      if (at === -1) return this.forward(text)
      if (at > 0) this.forward(text.slice(0, at))
      this.held = text.slice(at)
    }
    if (this.onOutput) this.held = takeOutputRecords(this.held, this.nonce, this.onOutput, this.forward)
    if (this.held.length > this.heldLimit) {
      this.forward(this.held)
      this.held = ''
    }
  }
  end(): void {
    if (this.head) this.forward(this.head)
    if (this.onOutput) this.held = takeLateOutputRecords(this.held, this.nonce, this.onOutput)
    const marker = RECORD_SEPARATOR + this.nonce
    const at = this.held.lastIndexOf(marker)
    if (at === -1) {
      if (this.held) this.forward(this.held)
      return
    }
    if (at > 0) this.forward(this.held.slice(0, at))
    this.report = this.held.slice(at + marker.length).trim()
  }
}

/** How long the deadline check waits for the engine to say whether the container is still running. */
const EXIT_CHECK_MS = 300

/**
 * After a kill, how long the run waits for the engine to confirm the exit before it answers anyway. A busy engine can
 * take seconds to kill and report (while a flood keeps streaming), and the service answers `timeout` for any adapter
 * not done within its grace (1 s by default) after the deadline: the deadline check, the kill and this window fit
 * inside it. The container is still removed (force), in the background.
 */
const STOP_CONFIRM_MS = 500

/**
 * At the deadline: a container that already stopped by then finished in time — the engine can be slow to report an
 * exit on a busy machine, and that is not the code's time. Anything still running, or an engine that does not
 * answer within EXIT_CHECK_MS, is killed.
 */
async function killUnlessExited(container: Docker.Container, deadlineAt: number, kill: (reason: StopReason) => void): Promise<void> {
  const state = await Promise.race([
    container.inspect().then(
      (info) => info.State,
      () => undefined,
    ),
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), EXIT_CHECK_MS)),
  ])
  const finishedAt = state && !state.Running ? Date.parse(state.FinishedAt) : Number.NaN
  if (Number.isFinite(finishedAt) && finishedAt <= deadlineAt) return
  kill('timeout')
}

/** Create, attach, start, wait (killing on the deadline, the cap or a cancel), and always remove. Never rejects. */
export async function runContainer(
  docker: Docker,
  spec: Docker.ContainerCreateOptions,
  options: {
    nonce: string
    /** The largest report the runner may send (reportLimitBytes of the policy). */
    reportLimitBytes?: number
    /** From the create call to the runner's ready line; past it the container is killed (a stalled engine or start). */
    startupTimeoutMs: number
    output: OutputCapture
    /**
     * The run's deadline and cancellation. Its clock is paused from the create call (creating and starting the
     * container is not the code's time) and restarted at the runner's ready line; a cancel is heard from the start.
     */
    controller: RunController
    /** Each rich output the runner sends while the code runs, unchecked (the host's OutputCollector checks it). */
    onOutputRecord?: (raw: unknown) => void
    /** Receives a removal still under way when the run answers (after a kill the engine was slow to confirm). */
    removingInBackground?: (removal: Promise<unknown>) => void
  },
): Promise<ContainerOutcome> {
  let container: Docker.Container | undefined
  let stoppedFor: StopReason | undefined
  let gaveUpWaiting = false
  let stopWindow: NodeJS.Timeout | undefined
  let giveUp: () => void = () => undefined
  // Resolves when a kill has gone unconfirmed for STOP_CONFIRM_MS; never when the run ends without one.
  const stopWindowClosed = new Promise<'unconfirmed'>((resolve) => (giveUp = () => resolve('unconfirmed')))
  const kill = (reason: StopReason) => {
    stoppedFor ??= stopReasonFor(reason, options.output)
    // One kill request: a flood calls this for every chunk past the drain allowance, and each request is a round trip
    // that queues on the engine (dozens per run were seen) and slows the very kill it repeats.
    if (stopWindow || !container) return
    container.kill({ signal: 'SIGKILL' }).catch(() => undefined)
    stopWindow = setTimeout(giveUp, STOP_CONFIRM_MS)
  }
  const { controller } = options
  // The code's clock starts at the runner's ready line; until then a stall guard covers the engine and the start.
  const startCode = () => {
    clearTimeout(stallTimer)
    if (container) controller.restartClock()
  }
  const filter = new ReportFilter(
    options.nonce,
    (text) => {
      if (!options.output.write('stdout', text) && options.output.totalBytes > options.output.limitBytes + OVERFLOW_DRAIN_BYTES)
        controller.stop('output_limit')
    },
    startCode,
    options.reportLimitBytes ?? 0,
    options.onOutputRecord,
  )
  let stalled = false
  let stall: () => void = () => undefined
  const stalling = new Promise<never>((_, reject) => (stall = () => reject(new Error('stalled'))))
  stalling.catch(() => undefined)
  const stallTimer = setTimeout(() => {
    stalled = true
    container?.kill({ signal: 'SIGKILL' }).catch(() => undefined)
    stall()
  }, options.startupTimeoutMs)
  const beforeStall = <T>(work: Promise<T>): Promise<T> => Promise.race([work, stalling])
  try {
    controller.pauseClock()
    const creating = docker.createContainer(spec)
    // A container the engine creates after the stall guard gave up on it is nobody's: removed when it appears.
    creating.then(
      (late) => stalled && late.remove({ force: true }).catch(() => undefined),
      () => undefined,
    )
    container = await beforeStall(creating)
    const stream = await beforeStall(container.attach({ stream: true, stdout: true, stderr: true, hijack: true }))
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    stdout.setEncoding('utf8').on('data', (text: string) => filter.write(text))
    stderr.setEncoding('utf8').on('data', (text: string) => {
      if (!options.output.write('stderr', text) && options.output.totalBytes > options.output.limitBytes + OVERFLOW_DRAIN_BYTES)
        controller.stop('output_limit')
    })
    const drained = new Promise<void>((resolve) => {
      stream.on('end', resolve)
      stream.on('close', resolve)
      stream.on('error', () => resolve())
    })
    container.modem.demuxStream(stream, stdout, stderr)
    await beforeStall(container.start())
    const running = container
    // Armed with the clock still paused: a cancel stops the run at once, the deadline only once the code starts.
    controller.start({ onStop: (cause) => (cause === 'timeout' ? void killUnlessExited(running, Date.now(), kill) : kill(cause)) })
    const waited = await beforeStall(Promise.race([container.wait() as Promise<{ StatusCode: number }>, stopWindowClosed]))
    if (waited === 'unconfirmed') {
      gaveUpWaiting = true
      ;(stream as unknown as Duplex).destroy()
      filter.end()
      return { stoppedFor, report: filter.report }
    }
    // The attach stream can end a moment after the exit; its last bytes are the report, or after a kill the last of
    // the output (waited for only while the stop window lasts).
    await Promise.race([drained, stoppedFor ? stopWindowClosed : new Promise((resolve) => setTimeout(resolve, 500))])
    filter.end()
    if (stalled) throw new Error('stalled')
    let oomKilled: boolean | undefined
    if (waited.StatusCode === 137 && !stoppedFor) oomKilled = (await container.inspect().catch(() => undefined))?.State?.OOMKilled
    return { stoppedFor, exitCode: waited.StatusCode, oomKilled, report: filter.report }
  } catch (error) {
    filter.end()
    if (stoppedFor) return { stoppedFor, report: filter.report }
    if (stalled)
      return {
        report: filter.report,
        engineError:
          `the container did not reach the code within ${options.startupTimeoutMs} ms of its create ` +
          `call (adapters.docker.startupTimeoutMs; a stalled engine or interpreter start); it was ` +
          `killed`,
      }
    const detail = (error as { json?: { message?: string }; message?: string }).json?.message ?? (error as Error).message
    return { report: filter.report, engineError: detail }
  } finally {
    clearTimeout(stallTimer)
    clearTimeout(stopWindow)
    controller.settle()
    // Always removed: after an error, a timeout, a cancel. A failure here only leaves a stopped container behind;
    // an engine that stalled, or was slow to confirm a kill, is not waited for.
    const removed = container?.remove({ force: true }).catch(() => undefined)
    if (stalled || gaveUpWaiting) {
      if (removed) options.removingInBackground?.(removed)
    } else await removed
  }
}
