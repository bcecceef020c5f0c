import fs from 'node:fs'
import path from 'node:path'
import { type ExecutionContext, type ExecutionErrorInfo, type ExecutionStatus, type WorkspaceFile } from '../../src/core'
import { Pool, PooledChildProcess, RunController, stoppedOutcome } from '../../src/runtime'
import { locateJustBash } from '../shared/just-bash'
import type { ShellJob, ShellWorkspaceChanges } from './protocol'

export interface ShellResultMessage {
  type: 'result'
  id: number
  status: ExecutionStatus
  stdout: string
  stderr: string
  error?: ExecutionErrorInfo
  files?: WorkspaceFile[]
  workspace?: ShellWorkspaceChanges
}

/** child.js is copied beside the compiled adapter; from sources (tests) it is beside this file already. */
function childScript(): string {
  const here = path.join(__dirname, 'child.js')
  return fs.existsSync(here) ? here : path.resolve(__dirname, '..', '..', '..', 'adapters', 'shell', 'child.js')
}

/** One warm shell process with a heap cap of its own, under Node's permission model. */
export class ShellProcess extends PooledChildProcess<ShellResultMessage> {
  constructor(heapMb: number, onExit: (process: ShellProcess, reason: string) => void) {
    const script = childScript()
    const { entry, folder } = locateJustBash()
    super(
      {
        module: script,
        args: [entry],
        execArgv: [
          '--experimental-permission',
          `--allow-fs-read=${folder}${path.sep}`,
          `--allow-fs-read=${script}`,
          '--no-warnings',
          `--max-old-space-size=${heapMb}`,
          `--max-semi-space-size=${Math.max(1, Math.floor(heapMb / 32))}`,
        ],
        // Nothing of the host's environment crosses.
        env: {},
        loads: 'just-bash',
      },
      (member, reason) => onExit(member as ShellProcess, reason),
    )
  }

  /** Whether its stderr says it died of its heap cap (read once it has exited). */
  get outOfMemory(): boolean {
    return /heap limit|out of memory/i.test(this.stderrTail)
  }

  protected exitReason(code: number | null, signal: NodeJS.Signals | null): string {
    return `the shell process exited (${signal ?? `code ${code}`})${this.stderrTail ? `: ${this.stderrTail.trim().split('\n')[0]}` : ''}`
  }
}

/**
 * A fixed number of warm shell processes sharing one heap cap, started at creation. A process killed at a
 * deadline or dead of its heap cap is replaced; requests wait in arrival order.
 */
export class ShellProcessPool extends Pool<ShellProcess> {
  constructor(
    readonly heapMb: number,
    size: number,
  ) {
    super({
      size,
      start: (onExit) => new ShellProcess(heapMb, onExit),
      cannotStart: 'shell processes cannot start',
      disposed: 'the shell adapter was disposed',
    })
  }
}

export type ShellOutcome = Omit<ShellResultMessage, 'type' | 'id'>

/**
 * Runs one script on a process from the pool; never rejects. The run's deadline and cancellation are the shared
 * RunController's: a cancel asks the process to stop the script politely, and past the deadline (or that cancel)
 * plus `killGraceMs` the process is killed and replaced, so a script stuck inside one command cannot hold it.
 */
export async function runShellJob(
  pool: ShellProcessPool,
  job: ShellJob,
  context: ExecutionContext,
  killGraceMs: number,
): Promise<ShellOutcome> {
  let member: ShellProcess
  try {
    member = await pool.acquire()
  } catch (error) {
    return {
      status: 'unavailable',
      stdout: '',
      stderr: '',
      error: { type: 'Unavailable', message: `[execgate] [shell] ${(error as Error).message}` },
    }
  }
  const run = new RunController(context, { graceMs: killGraceMs })
  job.remainingMs = run.remainingMs()
  return new Promise((resolve) => {
    const finish = (outcome: ShellOutcome, reusable: boolean) => {
      if (!run.settle()) return
      if (reusable) pool.release(member)
      else void pool.replace(member)
      resolve(outcome)
    }
    member.attach(
      (message) => {
        if (message.id === job.id)
          finish(
            {
              status: message.status,
              stdout: message.stdout,
              stderr: message.stderr,
              error: message.error,
              files: message.files,
              workspace: message.workspace,
            },
            true,
          )
      },
      (reason) =>
        finish(
          member.outOfMemory
            ? {
                status: 'memory_limit',
                stdout: '',
                stderr: '',
                error: { type: 'MemoryError', message: `memory limit reached (${pool.heapMb} MiB); the shell process was stopped` },
              }
            : {
                status: 'internal_error',
                stdout: '',
                stderr: '',
                error: { type: 'InternalError', message: `[execgate] [shell] ${reason}` },
              },
          false,
        ),
    )
    run.start({
      onCancel: () => member.send({ type: 'cancel', id: job.id }),
      onStop: (cause) => {
        const stopped = stoppedOutcome(cause, context.policy.wallTimeMs)
        finish(
          {
            status: stopped.status,
            stdout: '',
            stderr: '',
            error: { ...stopped.error, message: `${stopped.error.message}; the shell process was killed` },
          },
          false,
        )
      },
    })
    // A run cancelled before it started never reaches the process (which is replaced after the grace).
    if (!context.signal.aborted) member.send(job)
  })
}
