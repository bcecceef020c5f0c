import { fork, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import { type ExecutionContext, type ExecutionErrorInfo, type ExecutionStatus, type WorkspaceFile } from '../../src/core'
import { RunController, stoppedOutcome } from '../../src/runtime'
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

type ChildMessage = { type: 'ready' } | { type: 'failed'; reason: string } | ShellResultMessage

/** child.js is copied beside the compiled adapter; from sources (tests) it is beside this file already. */
function childScript(): string {
  const here = path.join(__dirname, 'child.js')
  return fs.existsSync(here) ? here : path.resolve(__dirname, '..', '..', '..', 'adapters', 'shell', 'child.js')
}

/** just-bash's CommonJS entry and the node_modules folder it (and its dependencies) load from. */
function justBash(): { entry: string; modules: string } {
  const entry = fs.realpathSync(require.resolve('just-bash'))
  return { entry, modules: entry.slice(0, entry.lastIndexOf(`${path.sep}node_modules${path.sep}`) + `${path.sep}node_modules`.length) }
}

/** One warm shell process with a heap cap of its own. */
class ShellProcess {
  readonly child: ChildProcess
  readonly ready: Promise<void>
  private listener: ((message: ShellResultMessage) => void) | undefined
  private onDeath: ((reason: string, outOfMemory: boolean) => void) | undefined
  private stderrTail = ''
  dead = false

  constructor(heapMb: number, onExit: (process: ShellProcess) => void) {
    const script = childScript()
    const { entry, modules } = justBash()
    this.child = fork(script, [entry], {
      execArgv: [
        '--experimental-permission', `--allow-fs-read=${modules}${path.sep}`, `--allow-fs-read=${script}`, '--no-warnings',
        `--max-old-space-size=${heapMb}`, `--max-semi-space-size=${Math.max(1, Math.floor(heapMb / 32))}`,
      ],
      // Nothing of the host's environment crosses.
      env: {},
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'advanced',
    })
    // Never shown to callers; its tail tells a heap-limit abort from any other death.
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-2000)
    })
    this.ready = new Promise((resolve, reject) => {
      this.child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') resolve()
        else if (message.type === 'failed') reject(new Error(`just-bash failed to load: ${message.reason}`))
        else this.listener?.(message)
      })
      this.child.once('exit', (code, signal) => {
        this.dead = true
        const outOfMemory = /heap limit|out of memory/i.test(this.stderrTail)
        const reason = `the shell process exited (${signal ?? `code ${code}`})${this.stderrTail ? `: ${this.stderrTail.trim().split('\n')[0]}` : ''}`
        reject(new Error(reason))
        this.onDeath?.(reason, outOfMemory)
        onExit(this)
      })
    })
    this.ready.catch(() => undefined)
    // Starting keeps the host alive (a caller may be waiting for it); an idle, warm process does not.
    this.ready.then(() => this.setRef(false), () => undefined)
  }

  private setRef(ref: boolean): void {
    const channel = this.child.channel as { ref?(): void; unref?(): void } | undefined
    if (ref) {
      this.child.ref()
      channel?.ref?.()
    } else {
      this.child.unref()
      channel?.unref?.()
    }
  }

  attach(listener: (message: ShellResultMessage) => void, onDeath: (reason: string, outOfMemory: boolean) => void): void {
    this.listener = listener
    this.onDeath = onDeath
    this.setRef(true)
  }

  detach(): void {
    this.listener = undefined
    this.onDeath = undefined
    if (!this.dead) this.setRef(false)
  }

  send(message: unknown): void {
    if (!this.dead && this.child.connected) this.child.send(message as never)
  }

  kill(): void {
    this.detach()
    if (this.dead) return
    // Held until it has exited: a caller awaiting the exit (dispose) must not see the host exit first because an
    // idle process was unref'd and nothing else was pending.
    this.child.ref()
    this.child.kill('SIGKILL')
  }
}

/**
 * A fixed number of warm shell processes sharing one heap cap, started at creation. A process killed at a
 * deadline or dead of its heap cap is replaced; requests wait in arrival order.
 */
export class ShellProcessPool {
  private readonly idle: ShellProcess[] = []
  private readonly all = new Set<ShellProcess>()
  private readonly waiting: { resolve: (process: ShellProcess) => void; reject: (error: Error) => void }[] = []
  private startFailures = 0
  private disposed = false
  lastFailure: string | undefined

  constructor(
    readonly heapMb: number,
    readonly size: number,
  ) {
    for (let i = 0; i < size; i++) this.spawn()
  }

  get broken(): boolean {
    return this.startFailures >= 3
  }

  private spawn(): void {
    const started = new ShellProcess(this.heapMb, (gone) => this.onExit(gone))
    this.all.add(started)
    started.ready.then(
      () => {
        this.startFailures = 0
        this.release(started)
      },
      (error: Error) => {
        this.lastFailure = error.message
      },
    )
  }

  private onExit(gone: ShellProcess): void {
    const index = this.idle.indexOf(gone)
    if (index >= 0) this.idle.splice(index, 1)
    if (!this.all.delete(gone) || this.disposed) return
    gone.ready.then(
      () => undefined,
      () => {
        this.startFailures++
        if (this.broken) for (const waiter of this.waiting.splice(0)) waiter.reject(new Error(`shell processes cannot start: ${this.lastFailure}`))
      },
    )
    if (!this.broken) this.spawn()
  }

  acquire(): Promise<ShellProcess> {
    if (this.broken) return Promise.reject(new Error(`shell processes cannot start: ${this.lastFailure ?? 'unknown reason'}`))
    const ready = this.idle.shift()
    return ready ? Promise.resolve(ready) : new Promise((resolve, reject) => this.waiting.push({ resolve, reject }))
  }

  release(process: ShellProcess): void {
    if (this.disposed || process.dead) return
    process.detach()
    const next = this.waiting.shift()
    if (next) next.resolve(process)
    else this.idle.push(process)
  }

  async dispose(): Promise<void> {
    this.disposed = true
    for (const waiter of this.waiting.splice(0)) waiter.reject(new Error('the shell adapter was disposed'))
    const all = [...this.all]
    this.all.clear()
    this.idle.length = 0
    await Promise.all(
      all.map(
        (member) =>
          new Promise<void>((resolve) => {
            if (member.dead) return resolve()
            member.child.once('exit', () => resolve())
            member.kill()
          }),
      ),
    )
  }
}

export type ShellOutcome = Omit<ShellResultMessage, 'type' | 'id'>

/**
 * Runs one script on a process from the pool; never rejects. The run's deadline and cancellation are the shared
 * RunController's: a cancel asks the process to stop the script politely, and past the deadline (or that cancel)
 * plus `killGraceMs` the process is killed and replaced, so a script stuck inside one command cannot hold it.
 */
export async function runShellJob(pool: ShellProcessPool, job: ShellJob, context: ExecutionContext, killGraceMs: number): Promise<ShellOutcome> {
  let member: ShellProcess
  try {
    member = await pool.acquire()
  } catch (error) {
    return { status: 'unavailable', stdout: '', stderr: '', error: { type: 'Unavailable', message: `[execgate] [shell] ${(error as Error).message}` } }
  }
  const run = new RunController(context, { graceMs: killGraceMs })
  job.remainingMs = run.remainingMs()
  return new Promise((resolve) => {
    const finish = (outcome: ShellOutcome, reusable: boolean) => {
      if (!run.settle()) return
      if (reusable) pool.release(member)
      else member.kill()
      resolve(outcome)
    }
    member.attach(
      (message) => {
        if (message.id === job.id) finish({ status: message.status, stdout: message.stdout, stderr: message.stderr, error: message.error, files: message.files, workspace: message.workspace }, true)
      },
      (reason, outOfMemory) =>
        finish(
          outOfMemory
            ? { status: 'memory_limit', stdout: '', stderr: '', error: { type: 'MemoryError', message: `memory limit reached (${pool.heapMb} MiB); the shell process was stopped` } }
            : { status: 'internal_error', stdout: '', stderr: '', error: { type: 'InternalError', message: `[execgate] [shell] ${reason}` } },
          false,
        ),
    )
    run.start({
      onCancel: () => member.send({ type: 'cancel', id: job.id }),
      onStop: (cause) => {
        const stopped = stoppedOutcome(cause, context.policy.wallTimeMs)
        finish({ status: stopped.status, stdout: '', stderr: '', error: { ...stopped.error, message: `${stopped.error.message}; the shell process was killed` } }, false)
      },
    })
    // A run cancelled before it started never reaches the process (which is replaced after the grace).
    if (!context.signal.aborted) member.send(job)
  })
}
