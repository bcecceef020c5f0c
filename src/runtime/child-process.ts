import { fork, type ChildProcess } from 'node:child_process'
import os from 'node:os'
import type { Readable, Writable } from 'node:stream'
import type { PoolMember } from './pool'
import { onlyChildOf } from './child-pid'

/** How a warm child process starts: its module, Node's flags (the permission model, a heap cap), its environment. */
export interface ChildProcessSpec {
  /** The module to fork. */
  module: string
  args?: readonly string[]
  execArgv: readonly string[]
  /** The child's whole environment: give it `{}` so code that reaches `process.env` finds nothing of the host's. */
  env: NodeJS.ProcessEnv
  /** Pipes beyond stderr and the IPC channel, as fds 4, 5, …: a protocol of the adapter's own. */
  extraPipes?: number
  /** `pipe` when the adapter reads the child's stdout (an interpreter that prints there); ignored otherwise. */
  stdout?: 'pipe'
  /** What loads in the child, for its `failed` message: `pyodide failed to load: …`. */
  loads: string
  /**
   * A launcher Node runs under (bubblewrap: a network namespace of its own), which execs `node` with `execArgv` after
   * `args`. It keeps the inherited fds (IPC, pipes) and the environment, and must not fork Node into a pid namespace:
   * the Node process is the launcher's one child, whose pid the host measures.
   */
  wrapper?: { file: string; args: readonly string[] }
}

/** What every such child says first: it is ready, or it could not load its interpreter. */
export type ChildHandshake = { type: 'ready'; note?: string } | { type: 'failed'; reason: string }

const STDERR_TAIL_CHARS = 2000

/**
 * A warm child process in a {@link Pool}: forked once with the adapter's flags, ready when it says so, serving one
 * run at a time over its IPC channel. Its stderr is never shown to callers but its tail is kept, because it says why
 * a child died (a heap-limit abort, a refusal by Node's permission model). While it starts or serves a run it holds
 * the host's event loop (someone is waiting for it); idle, it does not.
 */
export abstract class PooledChildProcess<Message extends { type: string }> implements PoolMember {
  readonly child: ChildProcess
  readonly ready: Promise<void>
  stderrTail = ''
  /** What the child said of how it serves when it became ready, in words (pyodide: how its memory is put back). */
  readyNote: string | undefined
  dead = false
  private readonly wrapped: boolean
  private nodePid: number | undefined
  private listener: ((message: Message) => void) | undefined
  private onDeath: ((reason: string) => void) | undefined

  constructor(spec: ChildProcessSpec, onExit: (member: PooledChildProcess<Message>, reason: string) => void) {
    this.wrapped = spec.wrapper !== undefined
    this.child = fork(spec.module, [...(spec.args ?? [])], {
      // fork runs `execPath ...execArgv module ...args`: with a wrapper, that is `bwrap ... -- node flags module args`.
      ...(spec.wrapper
        ? { execPath: spec.wrapper.file, execArgv: [...spec.wrapper.args, process.execPath, ...spec.execArgv] }
        : { execArgv: [...spec.execArgv] }),
      env: spec.env,
      stdio: ['ignore', spec.stdout ?? 'ignore', 'pipe', 'ipc', ...Array.from({ length: spec.extraPipes ?? 0 }, () => 'pipe' as const)],
      serialization: 'advanced',
    })
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-STDERR_TAIL_CHARS)
    })
    this.ready = new Promise((resolve, reject) => {
      this.child.on('message', (message: ChildHandshake | Message) => {
        if (message.type === 'ready') {
          this.readyNote = (message as { note?: string }).note
          resolve()
        } else if (message.type === 'failed') reject(new Error(`${spec.loads} failed to load: ${(message as { reason: string }).reason}`))
        else this.listener?.(message as Message)
      })
      this.child.once('exit', (exitCode, exitSignal) => {
        this.dead = true
        const { code, signal } = this.nodeExit(exitCode, exitSignal)
        const reason = this.exitReason(code, signal)
        reject(new Error(this.startExitReason(code, signal) ?? reason))
        this.onDeath?.(reason)
        onExit(this, reason)
      })
    })
    this.ready.catch(() => undefined)
    this.ready.then(
      () => this.hold(false),
      () => undefined,
    )
  }

  /**
   * The Node process's pid, which is what to measure (memory): the child itself, or under a wrapper its one child
   * (the launcher's own few hundred kilobytes are not the interpreter's). Undefined until the launcher has forked.
   */
  get processPid(): number | undefined {
    if (!this.wrapped) return this.child.pid
    this.nodePid ??= this.child.pid === undefined || this.dead ? undefined : onlyChildOf(this.child.pid)
    return this.nodePid
  }

  /** A launcher reports a child killed by a signal as exit code 128 + the signal's number: named again here. */
  private nodeExit(code: number | null, signal: NodeJS.Signals | null): { code: number | null; signal: NodeJS.Signals | null } {
    if (!this.wrapped || signal || code === null || code <= 128) return { code, signal }
    const name = Object.entries(os.constants.signals).find(([, number]) => number === code - 128)?.[0]
    return name ? { code: null, signal: name as NodeJS.Signals } : { code, signal }
  }

  /** Why the child exited, in words, from its exit and its stderr's tail. */
  protected abstract exitReason(code: number | null, signal: NodeJS.Signals | null): string

  /** Why it failed to start when it exits before it is ready, if that reads better than `exitReason`. */
  protected startExitReason(_code: number | null, _signal: NodeJS.Signals | null): string | undefined {
    return undefined
  }

  /** Hands a message that did not come over the IPC channel (an extra pipe's) to the run being served. */
  protected deliver(message: Message): void {
    this.listener?.(message)
  }

  /** One of the extra pipes (fd 4, 5, …). */
  protected pipe(fd: number): Readable | Writable | null {
    return (this.child.stdio as unknown as (Readable | Writable | null | undefined)[])[fd] ?? null
  }

  /** Appends a reason of ours to the tail and kills the child (a protocol breach). */
  protected killFor(reason: string): void {
    this.stderrTail = (this.stderrTail + `\n[execgate] ${reason}`).slice(-STDERR_TAIL_CHARS)
    this.child.kill('SIGKILL')
  }

  private hold(on: boolean): void {
    const handles = [this.child, this.child.channel, ...this.child.stdio.slice(1)] as (
      { ref?(): void; unref?(): void } | null | undefined
    )[]
    for (const handle of handles) (on ? handle?.ref : handle?.unref)?.call(handle)
  }

  /** Routes the child's messages to one run; `onDeath` fires if it dies mid-run. */
  attach(listener: (message: Message) => void, onDeath: (reason: string) => void): void {
    this.listener = listener
    this.onDeath = onDeath
    this.hold(true)
  }

  detach(): void {
    this.listener = undefined
    this.onDeath = undefined
    if (!this.dead) this.hold(false)
  }

  send(message: unknown): void {
    if (!this.dead && this.child.connected) this.child.send(message as never)
  }

  async kill(): Promise<void> {
    this.detach()
    if (this.dead) return
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()))
    // Held until it has exited: a caller awaiting the exit (dispose at the end of a CLI run) must not see the host
    // end first because an idle child was unreferenced and nothing else was pending.
    this.child.ref()
    this.child.kill('SIGKILL')
    await exited
  }
}
