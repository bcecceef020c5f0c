import { PassThrough, type Duplex } from 'node:stream'
import type Docker from 'dockerode'
import type { OutputCapture } from '../../src/core'
import type { RunController } from '../../src/runtime'
import { RECORD_SEPARATOR, takeLateOutputRecords, takeOutputRecords } from '../shared/run-report'
import { stopReasonFor, type StopReason } from '../shared/stop-reason'
import type { ContainerOutcome } from './container-run'

/**
 * One exec into a sandbox's running container (`docker exec`, never a new container). The launcher around the
 * program (see `sandboxLauncher`) writes `<RS><nonce>exit <code>` on stdout and on stderr once the program has ended
 * and its leftovers are killed: seeing both means every byte of both streams has arrived, so the exec answers then,
 * without waiting for the engine to close the stream (40 ms on podman).
 */

/** Output past the cap is still counted up to this much before the exec is killed (as in a container run). */
const OVERFLOW_DRAIN_BYTES = 1024 * 1024
/** After a kill, how long the exec waits for its stream to end before it answers anyway (as container-run's). */
const STOP_CONFIRM_MS = 500
/**
 * Text held after a record separator beyond this is the code's own output, not a report: it is passed on. The
 * report can be as large as the policy's outputs allow (reportLimitBytes), so the exec's own limit is at least that.
 */
const HELD_LIMIT = 4 * 1024 * 1024

export type SandboxExecOutcome = ContainerOutcome

/**
 * One stream of an exec: passes the code's text on, and takes out what the runner and the launcher add (the ready
 * line first, the report and the exit record last), recognised by the per-exec nonce.
 */
class MarkedStream {
  private head = ''
  private held = ''
  private ready: boolean
  exitCode: number | undefined
  report = ''

  constructor(
    private readonly nonce: string,
    private readonly forward: (text: string) => void,
    /** `onOutput`: output records (`<RS><nonce>{"output":…}`), taken out as they arrive (the runner's stream only). */
    private readonly events: { expectReady: boolean; onReady?: () => void; onExit: () => void; onOutput?: (raw: unknown) => void },
    private readonly heldLimit = HELD_LIMIT,
  ) {
    this.ready = !events.expectReady
  }

  write(text: string): void {
    if (!this.ready) {
      this.head += text
      const marker = `${RECORD_SEPARATOR}${this.nonce}ready\n`
      if (this.head.length < marker.length && marker.startsWith(this.head)) return
      this.ready = true
      text = this.head.startsWith(marker) ? this.head.slice(marker.length) : this.head
      this.head = ''
      this.events.onReady?.()
      if (!text) return
    }
    if (!this.held) {
      const at = text.indexOf(RECORD_SEPARATOR)
      if (at === -1) return this.forward(text)
      if (at > 0) this.forward(text.slice(0, at))
      text = text.slice(at)
    }
    this.held += text
    if (this.events.onOutput) this.held = takeOutputRecords(this.held, this.nonce, this.events.onOutput, this.forward)
    if (!this.held) return
    const exit = new RegExp(`${RECORD_SEPARATOR}${this.nonce}exit (\\d+)\\n$`).exec(this.held.slice(-64))
    if (exit) {
      this.exitCode = Number(exit[1])
      this.held = this.held.slice(0, this.held.length - exit[0].length)
      this.events.onExit()
    } else if (this.held.length > this.heldLimit) {
      this.forward(this.held)
      this.held = ''
    }
  }

  end(): void {
    if (this.head) this.forward(this.head)
    this.head = ''
    if (this.events.onOutput) this.held = takeLateOutputRecords(this.held, this.nonce, this.events.onOutput)
    const marker = RECORD_SEPARATOR + this.nonce
    const at = this.held.lastIndexOf(marker)
    if (at === -1) {
      if (this.held) this.forward(this.held)
    } else {
      if (at > 0) this.forward(this.held.slice(0, at))
      this.report = this.held.slice(at + marker.length).trim()
    }
    this.held = ''
  }
}

export interface SandboxExecSpec {
  Cmd: string[]
  Env: string[]
  User: string
  WorkingDir: string
  stdin?: string
}

/**
 * Runs one exec and resolves once it has ended; never rejects. The clock is paused from the exec's create call to
 * the ready line (the engine's exec start is not the code's time); a stop (the deadline, a cancel, the output cap)
 * calls `kill`, which ends every process of the exec's user in the container.
 */
export async function runSandboxExec(
  container: Docker.Container,
  spec: SandboxExecSpec,
  options: {
    nonce: string
    output: OutputCapture
    controller: RunController
    startupTimeoutMs: number
    launcherReady: boolean
    kill: () => Promise<unknown>
    /** The largest report the runner may send (reportLimitBytes of the policy). */
    reportLimitBytes?: number
    /** Each rich output the runner sends while the code runs, unchecked (the host's OutputCollector checks it). */
    onOutputRecord?: (raw: unknown) => void
  },
): Promise<SandboxExecOutcome> {
  const { controller, output } = options
  let stoppedFor: StopReason | undefined
  let killing: Promise<unknown> | undefined
  let stream: Duplex | undefined
  let finish: (how: 'exited' | 'ended' | 'unconfirmed' | 'stalled') => void = () => undefined
  const finished = new Promise<'exited' | 'ended' | 'unconfirmed' | 'stalled'>((resolve) => (finish = resolve))
  let stopWindow: NodeJS.Timeout | undefined
  const stop = (reason: StopReason) => {
    stoppedFor ??= stopReasonFor(reason, output)
    if (killing) return
    killing = options.kill().catch(() => undefined)
    stopWindow = setTimeout(() => finish('unconfirmed'), STOP_CONFIRM_MS)
  }
  const overflow = () => output.totalBytes > output.limitBytes + OVERFLOW_DRAIN_BYTES && controller.stop('output_limit')
  const exited = () => stdout.exitCode !== undefined && stderr.exitCode !== undefined && finish('exited')
  const stdout = new MarkedStream(options.nonce, (text) => void (output.write('stdout', text) || overflow()), {
    expectReady: true,
    onReady: () => {
      clearTimeout(stallTimer)
      controller.restartClock()
    },
    onExit: exited,
    ...(options.onOutputRecord ? { onOutput: options.onOutputRecord } : {}),
  })
  const stderr = new MarkedStream(options.nonce, (text) => void (output.write('stderr', text) || overflow()), {
    expectReady: false,
    onExit: exited,
  })
  const stallTimer = setTimeout(() => {
    stop('timeout')
    finish('stalled')
  }, options.startupTimeoutMs)
  let exec: Docker.Exec | undefined
  try {
    controller.pauseClock()
    exec = await container.exec({
      Cmd: spec.Cmd,
      Env: spec.Env,
      User: spec.User,
      WorkingDir: spec.WorkingDir,
      AttachStdout: true,
      AttachStderr: true,
      AttachStdin: spec.stdin !== undefined,
      Tty: false,
    })
    stream = (await exec.start({ hijack: true, stdin: spec.stdin !== undefined })) as unknown as Duplex
    const out = new PassThrough()
    const err = new PassThrough()
    out.setEncoding('utf8').on('data', (text: string) => stdout.write(text))
    err.setEncoding('utf8').on('data', (text: string) => stderr.write(text))
    stream.on('end', () => finish('ended'))
    stream.on('close', () => finish('ended'))
    stream.on('error', () => finish('ended'))
    container.modem.demuxStream(stream, out, err)
    if (spec.stdin !== undefined) stream.end(spec.stdin)
    // Armed with the clock paused: a cancel stops the exec at once, the deadline only once the code starts.
    controller.start({ onStop: stop })
    const how = await finished
    // The stream's last bytes may still be in the demuxer's buffers when the engine closes it.
    await new Promise((resolve) => setImmediate(resolve))
    stdout.end()
    stderr.end()
    if (how === 'stalled')
      return {
        report: stdout.report,
        engineError:
          `the exec did not reach the code within ${options.startupTimeoutMs} ms ` + `(adapters.docker.startupTimeoutMs); it was killed`,
      }
    if (stdout.exitCode !== undefined) return { stoppedFor, exitCode: stdout.exitCode, report: stdout.report }
    if (how === 'unconfirmed') return { stoppedFor, report: stdout.report }
    // The launcher itself ended without its exit record (killed): the engine has the exec's exit code.
    const inspected = await exec.inspect().catch(() => undefined)
    return { stoppedFor, exitCode: inspected?.ExitCode ?? undefined, report: stdout.report }
  } catch (error) {
    stdout.end()
    stderr.end()
    if (stoppedFor) return { stoppedFor, report: stdout.report }
    const detail = (error as { json?: { message?: string }; message?: string }).json?.message ?? (error as Error).message
    return { report: stdout.report, engineError: detail }
  } finally {
    clearTimeout(stallTimer)
    clearTimeout(stopWindow)
    controller.settle()
    stream?.destroy()
    // A kill still under way is waited for: the next exec must find no process of this one.
    if (killing) await killing
  }
}
