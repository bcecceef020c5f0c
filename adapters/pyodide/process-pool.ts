import { fork, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import path from 'node:path'
import type { Readable, Writable } from 'node:stream'

export type ChildMessage =
  | { type: 'ready' }
  | { type: 'failed'; reason: string }
  | { type: 'output'; id: number; chunks: ['stdout' | 'stderr', string][] }
  | { type: 'parsed'; id: number; error?: { type: string; message: string; line?: number; column?: number } }
  | { type: 'result'; id: number; status: 'ok' | 'error'; value?: unknown; session?: string; error?: { type: string; message: string; line?: number; stack?: string } }
  | { type: 'checked'; id: number; recycle: boolean }
  /** From the host-call channel (fd 4), not the IPC channel; `args` is the JSON text of the argument list. */
  | { type: 'hostCall'; id: number; name: string; args: string }

/** A host call's request line may carry a whole file to write; anything longer is not a host call. */
const MAX_HOST_CALL_LINE_BYTES = 64 * 2 ** 20

/** The reply to a host call, one JSON line on fd 5. */
export type HostCallReply = { ok: true; value: unknown } | { ok: false; exception: string; message: string }

/** child.js ships beside the compiled adapter; from sources (tests) it is beside this file already. */
function childScript(): string {
  const here = path.join(__dirname, 'child.js')
  if (fs.existsSync(here)) return here
  return path.resolve(__dirname, '..', '..', '..', 'adapters', 'pyodide', 'child.js')
}

export function pyodideDirectory(): string {
  return path.dirname(require.resolve('pyodide/pyodide.js'))
}

/** No process became free within the wait a caller allowed. */
export class PoolWaitTimeout extends Error {
  constructor(readonly waitedMs: number) {
    super(`no pyodide interpreter was free within ${Math.round(waitedMs)} ms`)
    this.name = 'PoolWaitTimeout'
  }
}

/** One warm pyodide process. */
export class PyodideProcess {
  readonly child: ChildProcess
  readonly ready: Promise<void>
  private listener: ((message: ChildMessage) => void) | undefined
  private onDeath: ((reason: string) => void) | undefined
  dead = false
  runs = 0
  stderrTail = ''

  constructor(onExit: (process: PyodideProcess) => void) {
    const pyodideDir = pyodideDirectory()
    const script = childScript()
    this.child = fork(script, [pyodideDir], {
      execArgv: ['--experimental-permission', `--allow-fs-read=${pyodideDir}${path.sep}`, `--allow-fs-read=${script}`, '--no-warnings', '--max-old-space-size=512'],
      // Nothing of the host's environment crosses: code that reaches `process.env` finds it empty.
      env: {},
      // fd 4 carries host-call requests from the child, fd 5 the answers it blocks on.
      stdio: ['ignore', 'ignore', 'pipe', 'ipc', 'pipe', 'pipe'],
      serialization: 'advanced',
    })
    // Never shown to anyone, but its tail says why a process died (the permission model's refusals land here).
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-2000)
    })
    this.readHostCalls()
    this.ready = new Promise((resolve, reject) => {
      this.child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') resolve()
        else if (message.type === 'failed') reject(new Error(`pyodide failed to load: ${message.reason}`))
        else this.listener?.(message)
      })
      this.child.once('exit', (code, signal) => {
        this.dead = true
        reject(new Error(`the pyodide process exited while loading (${signal ?? `code ${code}`})`))
        this.onDeath?.(this.deathReason(code, signal))
        onExit(this)
      })
    })
    this.ready.catch(() => undefined)
    // Warming keeps the host alive (someone may be waiting for it); an idle, warm process does not.
    this.ready.then(() => this.setRef(false), () => undefined)
  }

  /** Host-call requests, one JSON line each; a malformed or oversized line ends the process. */
  private readHostCalls(): void {
    const requests = this.pipe(4) as Readable | null
    if (!requests) return
    let carry = ''
    requests.setEncoding('utf8')
    requests.on('data', (text: string) => {
      carry += text
      if (carry.length > MAX_HOST_CALL_LINE_BYTES) return this.killFor('a host call passed 64 MiB of arguments')
      for (let newline = carry.indexOf('\n'); newline >= 0; newline = carry.indexOf('\n')) {
        const line = carry.slice(0, newline)
        carry = carry.slice(newline + 1)
        let request: { id?: unknown; name?: unknown; args?: unknown }
        try {
          request = JSON.parse(line)
        } catch {
          return this.killFor('the interpreter sent a malformed host call')
        }
        if (typeof request.id !== 'number' || typeof request.name !== 'string' || typeof request.args !== 'string') {
          return this.killFor('the interpreter sent a malformed host call')
        }
        this.listener?.({ type: 'hostCall', id: request.id, name: request.name, args: request.args })
      }
    })
    // The pipes close with the process; their errors say nothing the exit does not.
    requests.on('error', () => undefined)
    this.pipe(5)?.on('error', () => undefined)
  }

  /** The child's stdio beyond the four Node's types name. */
  private pipe(fd: number): Readable | Writable | null {
    return ((this.child.stdio as unknown as (Readable | Writable | null | undefined)[])[fd] ?? null)
  }

  /** Answers the host call the child is blocked on. */
  reply(answer: HostCallReply): void {
    if (this.dead) return
    ;(this.pipe(5) as Writable | null)?.write(JSON.stringify(answer) + '\n')
  }

  private killFor(reason: string): void {
    this.stderrTail = (this.stderrTail + `\n[execgate] ${reason}`).slice(-2000)
    this.child.kill('SIGKILL')
  }

  private setRef(on: boolean): void {
    const channel = (this.child as unknown as { channel?: { ref(): void; unref(): void } }).channel
    const pipes = [2, 4, 5].map((fd) => this.pipe(fd) as unknown as { ref?(): void; unref?(): void } | null)
    if (on) {
      this.child.ref()
      channel?.ref()
      for (const pipe of pipes) pipe?.ref?.()
    } else {
      this.child.unref()
      channel?.unref()
      for (const pipe of pipes) pipe?.unref?.()
    }
  }

  /** Why the process died, in words; a refusal by Node's permission model is named as such. */
  private deathReason(code: number | null, signal: NodeJS.Signals | null): string {
    const denied = /ERR_ACCESS_DENIED[\s\S]*?permission: '([^']+)'/.exec(this.stderrTail) ?? /ERR_ACCESS_DENIED/.exec(this.stderrTail)
    const ours = /\[execgate\] (.+)$/.exec(this.stderrTail)
    if (ours) return `the pyodide process was stopped: ${ours[1]}`
    if (denied) return `the sandbox refused an operation${denied[1] ? ` (${denied[1]})` : ''} and stopped the interpreter`
    return `the pyodide process exited (${signal ?? `code ${code}`})`
  }

  attach(listener: (message: ChildMessage) => void, onDeath: (reason: string) => void): void {
    this.listener = listener
    this.onDeath = onDeath
    this.setRef(true)
  }

  detach(): void {
    this.listener = undefined
    this.onDeath = undefined
    if (!this.dead) this.setRef(false)
  }

  /** Resident memory of the child, from /proc, without asking the (possibly busy) child. */
  rssBytes(): number | undefined {
    try {
      const status = fs.readFileSync(`/proc/${this.child.pid}/status`, 'utf8')
      const kib = /VmRSS:\s+(\d+) kB/.exec(status)?.[1]
      return kib ? Number(kib) * 1024 : undefined
    } catch {
      return undefined
    }
  }

  kill(): void {
    this.detach()
    if (!this.dead) this.child.kill('SIGKILL')
  }
}

/**
 * Long-lived pyodide processes, warmed at start so no request pays the ~4 s cold start. A process that is killed
 * (timeout, memory, output flood) or poisoned by its run is replaced in the background.
 */
export class PyodideProcessPool {
  private readonly idle: PyodideProcess[] = []
  private readonly all = new Set<PyodideProcess>()
  private readonly waiting: { resolve: (process: PyodideProcess) => void; reject: (error: Error) => void }[] = []
  private disposed = false
  private failures = 0
  lastFailure: string | undefined

  private started = false
  private loadedOnce = false

  constructor(
    readonly size: number,
    warmNow: boolean,
  ) {
    if (warmNow) this.start()
  }

  private start(): void {
    if (this.started) return
    this.started = true
    for (let i = 0; i < this.size; i++) this.spawn()
  }

  get broken(): boolean {
    return this.failures >= 3
  }

  private spawn(): void {
    const pyodideProcess = new PyodideProcess((exited) => this.onExit(exited))
    this.all.add(pyodideProcess)
    pyodideProcess.ready.then(
      () => {
        this.loadedOnce = true
        this.failures = 0
        this.release(pyodideProcess)
      },
      (error: Error) => {
        this.failures++
        this.lastFailure = error.message
        if (this.broken) for (const waiter of this.waiting.splice(0)) waiter.reject(new Error(`pyodide cannot start here: ${error.message}`))
      },
    )
  }

  private onExit(exited: PyodideProcess): void {
    const index = this.idle.indexOf(exited)
    if (index >= 0) this.idle.splice(index, 1)
    if (!this.all.delete(exited) || this.disposed || this.broken) return
    this.spawn()
  }

  /**
   * An idle process, or the next one to become idle. `maxWaitMs` bounds the wait (a run's own deadline): past it the
   * promise rejects with PoolWaitTimeout and the caller is no longer in line.
   */
  async acquire(maxWaitMs = Number.POSITIVE_INFINITY): Promise<PyodideProcess> {
    this.start()
    if (this.broken) throw new Error(`pyodide cannot start here: ${this.lastFailure}`)
    const ready = this.idle.shift()
    if (ready) return ready
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined
      const waiter = {
        resolve: (process: PyodideProcess) => (clearTimeout(timer), resolve(process)),
        reject: (error: Error) => (clearTimeout(timer), reject(error)),
      }
      if (Number.isFinite(maxWaitMs)) {
        timer = setTimeout(() => {
          const index = this.waiting.indexOf(waiter)
          if (index >= 0) this.waiting.splice(index, 1)
          reject(new PoolWaitTimeout(maxWaitMs))
        }, maxWaitMs)
      }
      this.waiting.push(waiter)
    })
  }

  release(pyodideProcess: PyodideProcess): void {
    pyodideProcess.detach()
    if (this.disposed || pyodideProcess.dead) return
    const next = this.waiting.shift()
    if (next) next.resolve(pyodideProcess)
    else this.idle.push(pyodideProcess)
  }

  /** Kills a process; its replacement starts warming at once. */
  replace(pyodideProcess: PyodideProcess): void {
    const known = this.all.delete(pyodideProcess)
    pyodideProcess.kill()
    if (known && !this.disposed && !this.broken) this.spawn()
  }

  /** No interpreter has loaded yet: the pool is warming up (or has not started). */
  get warming(): boolean {
    return !this.loadedOnce
  }

  /** True when an interpreter is loaded and idle: a run now would not wait for one to start. */
  get hasIdle(): boolean {
    return this.idle.length > 0
  }

  /** Starts the pool if it has not started and resolves once one interpreter is loaded (rejects if none can be). */
  async warmUp(): Promise<void> {
    if (this.idle.length > 0) return
    this.release(await this.acquire())
  }

  /** Resolves once every process has finished warming (or failed). */
  async warm(): Promise<void> {
    this.start()
    await Promise.allSettled([...this.all].map((item) => item.ready))
  }

  async dispose(): Promise<void> {
    this.disposed = true
    for (const waiter of this.waiting.splice(0)) waiter.reject(new Error('the pyodide adapter was disposed'))
    for (const item of this.all) item.kill()
    this.all.clear()
    this.idle.length = 0
  }
}
