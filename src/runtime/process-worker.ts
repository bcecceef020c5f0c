import { fork, type ChildProcess } from 'node:child_process'
import { EventEmitter } from 'node:events'
import fs from 'node:fs'
import path from 'node:path'

/**
 * A worker module run in a child process instead of a thread, behind the few calls a pool makes of a thread
 * (`postMessage`, `terminate`, `ref`/`unref`, the `message` and `exit` events). For native interpreters whose
 * allocations a thread cannot keep out of the host: memory a run takes in a child goes when the child goes, and a
 * child that grows past `maxRssBytes` mid-run is killed (an RSS watchdog, since a synchronous interpreter cannot be
 * interrupted from inside).
 */

export interface ProcessWorkerOptions {
  /** Killed when its resident memory passes this; `memoryExceeded` then says why it exited. */
  maxRssBytes: number
  /** How often the RSS is read while the child runs a job. @default 50 */
  pollMs?: number
}

const PAGE_BYTES = 4096

/** The child's resident set, from /proc (Linux); undefined where it cannot be read. */
export function residentBytes(pid: number | undefined): number | undefined {
  if (!pid) return undefined
  try {
    const statm = fs.readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')
    return Number(statm[1]) * PAGE_BYTES
  } catch {
    return undefined
  }
}

export class ProcessWorker extends EventEmitter {
  readonly child: ChildProcess
  /** Set when the watchdog killed the child for passing `maxRssBytes`. */
  memoryExceeded = false
  private watchdog: NodeJS.Timeout | undefined
  /** Until its first message (ready) the child holds the event loop, so a host awaiting its start is not ended early. */
  private started = false
  private unrefWhenStarted = false

  /** @param directory folder of the worker module, @param name its file name without extension */
  constructor(
    directory: string,
    name: string,
    readonly options: ProcessWorkerOptions,
  ) {
    super()
    const modulePath = moduleToFork(directory, name)
    const fromSource = modulePath.endsWith('.ts')
    this.child = fork(modulePath, [], {
      // From sources (ts-jest, ts-node) the child compiles the module the same way the thread bootstrap does.
      execArgv: fromSource ? ['-r', 'ts-node/register/transpile-only'] : [],
      env: { ...process.env, ...(fromSource ? { TS_NODE_COMPILER_OPTIONS: JSON.stringify({ module: 'commonjs' }) } : {}) },
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
    })
    this.child.on('message', (message) => {
      if (!this.started) {
        this.started = true
        if (this.unrefWhenStarted) this.unref()
      }
      this.emit('message', message)
    })
    this.child.on('error', (error) => this.emit('error', error))
    this.child.once('exit', (code, signal) => {
      clearInterval(this.watchdog)
      this.emit('exit', code ?? (signal ? 128 : 0))
    })
  }

  postMessage(message: unknown): void {
    if (this.child.connected) this.child.send(message as never)
  }

  /** While a job runs: the watchdog reads the child's RSS and kills it past the bound. */
  ref(): void {
    this.unrefWhenStarted = false
    this.child.ref()
    this.child.channel?.ref()
    clearInterval(this.watchdog)
    this.watchdog = setInterval(() => {
      const rss = residentBytes(this.child.pid)
      if (rss !== undefined && rss > this.options.maxRssBytes) {
        this.memoryExceeded = true
        this.child.kill('SIGKILL')
      }
    }, this.options.pollMs ?? 50)
  }

  unref(): void {
    clearInterval(this.watchdog)
    if (!this.started) {
      this.unrefWhenStarted = true
      return
    }
    this.child.unref()
    this.child.channel?.unref()
  }

  async terminate(): Promise<number> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.child.exitCode ?? 0
    const exited = new Promise<number>((resolve) => this.child.once('exit', (code) => resolve(code ?? 0)))
    // Held while it dies: an unreferenced child's exit does not keep the loop alive, and a host awaiting it
    // (dispose at the end of a CLI run) would end before its own work, with exit code 0.
    clearInterval(this.watchdog)
    this.child.ref()
    this.child.kill('SIGKILL')
    return exited
  }
}

const ROOT = path.resolve(__dirname, '..', '..')

/**
 * The module to fork: `<name>.js` beside the caller once compiled; from sources (ts-jest), its twin in dist/ if that
 * is at least as new as the source, else the source itself (through ts-node). A process started through ts-node
 * compiles its imports first (1.6 s against 0.37 s measured here), which made replacing a worker after a memory bomb
 * slower than a run's time limit; `npm test` builds dist/ before jest, so the twin is the same code.
 */
function moduleToFork(directory: string, name: string): string {
  const beside = path.join(directory, `${name}.js`)
  if (fs.existsSync(beside)) return beside
  const source = path.join(directory, `${name}.ts`)
  const twin = path.join(ROOT, 'dist', path.relative(ROOT, beside))
  try {
    return fs.statSync(twin).mtimeMs >= fs.statSync(source).mtimeMs ? twin : source
  } catch {
    return source
  }
}
