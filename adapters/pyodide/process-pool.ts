import fs from 'node:fs'
import path from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { Pool, PooledChildProcess } from '../../src/runtime'
import { type NetworkWrapper, probeNetworkWrapper } from './network-namespace'

export type ChildMessage =
  | { type: 'output'; id: number; chunks: ['stdout' | 'stderr', string][] }
  | { type: 'parsed'; id: number; error?: { type: string; message: string; line?: number; column?: number } }
  | {
      type: 'result'
      id: number
      status: 'ok' | 'error'
      value?: unknown
      session?: string
      /** display() items left out for the policy's limits. */
      outputsOmitted?: number
      error?: { type: string; message: string; line?: number; stack?: string }
    }
  | { type: 'checked'; id: number; recycle: boolean }
  /** A display() item as the code made it (JSON text), unchecked: the host's OutputCollector checks it. */
  | { type: 'display'; id: number; item: string }
  /** From the host-call channel (fd 4), not the IPC channel; `args` is the JSON text of the argument list. */
  | { type: 'hostCall'; id: number; name: string; args: string }

const PAGE_BYTES = 4096

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

/**
 * The kernel's write reports for the memory restore (write-watch.c), built by `npm run build` into dist beside the
 * compiled adapter; undefined where it was not built (the child then compares its whole memory).
 */
function writeWatchAddon(): string | undefined {
  const built = [
    path.join(__dirname, 'write-watch.node'),
    path.resolve(__dirname, '..', '..', 'dist', 'adapters', 'pyodide', 'write-watch.node'),
  ]
  return built.find((file) => fs.existsSync(file))
}

export function pyodideDirectory(): string {
  return path.dirname(require.resolve('pyodide/pyodide.js'))
}

/** One warm pyodide process, under Node's permission model, with a host-call channel of its own (fds 4 and 5). */
export class PyodideProcess extends PooledChildProcess<ChildMessage> {
  runs = 0
  /** Resident bytes read when its last run's check came in and it was kept: the next run's baseline. */
  idleRssBytes: number | undefined
  /** /proc/<pid>/statm, opened at the first read and read again in place (one pread, not open, read and close). */
  private statm: number | undefined
  private readonly statmText = Buffer.alloc(128)

  /** @param wrapper bubblewrap's network namespace around the child, where it works */
  constructor(onExit: (process: PyodideProcess, reason: string) => void, wrapper?: NetworkWrapper) {
    const pyodideDir = pyodideDirectory()
    const script = childScript()
    const addon = writeWatchAddon()
    super(
      {
        module: script,
        args: addon ? [pyodideDir, addon] : [pyodideDir],
        execArgv: [
          '--experimental-permission',
          `--allow-fs-read=${pyodideDir}${path.sep}`,
          `--allow-fs-read=${script}`,
          // The Python it runs once loaded, beside it.
          `--allow-fs-read=${path.join(path.dirname(script), 'child-python.js')}`,
          `--allow-fs-read=${path.join(path.dirname(script), 'child-guard.js')}`,
          // Its one addon, loaded before any run; the child refuses every load after it (child-guard.js).
          ...(addon ? ['--allow-addons', `--allow-fs-read=${addon}`] : []),
          '--no-warnings',
          '--max-old-space-size=512',
        ],
        // Nothing of the host's environment crosses: code that reaches `process.env` finds it empty.
        env: {},
        // fd 4 carries host-call requests from the child, fd 5 the answers it blocks on.
        extraPipes: 2,
        loads: 'pyodide',
        ...(wrapper ? { wrapper } : {}),
      },
      (member, reason) => {
        ;(member as PyodideProcess).closeStatm()
        onExit(member as PyodideProcess, reason)
      },
    )
    this.readHostCalls()
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
        this.deliver({ type: 'hostCall', id: request.id, name: request.name, args: request.args })
      }
    })
    // The pipes close with the process; their errors say nothing the exit does not.
    requests.on('error', () => undefined)
    this.pipe(5)?.on('error', () => undefined)
  }

  /** Answers the host call the child is blocked on. */
  reply(answer: HostCallReply): void {
    if (this.dead) return
    ;(this.pipe(5) as Writable | null)?.write(JSON.stringify(answer) + '\n')
  }

  /** Why the process died, in words; a refusal by Node's permission model is named as such. */
  protected exitReason(code: number | null, signal: NodeJS.Signals | null): string {
    const denied = /ERR_ACCESS_DENIED[\s\S]*?permission: '([^']+)'/.exec(this.stderrTail) ?? /ERR_ACCESS_DENIED/.exec(this.stderrTail)
    const ours = /\[execgate\] (.+)$/.exec(this.stderrTail)
    if (ours) return `the pyodide process was stopped: ${ours[1]}`
    if (denied) return `the sandbox refused an operation${denied[1] ? ` (${denied[1]})` : ''} and stopped the interpreter`
    return `the pyodide process exited (${signal ?? `code ${code}`})`
  }

  protected override startExitReason(code: number | null, signal: NodeJS.Signals | null): string {
    return `the pyodide process exited while loading (${signal ?? `code ${code}`})`
  }

  /**
   * Resident memory of the Node process (under bubblewrap, its child), from /proc, without asking the (possibly busy)
   * child. Read two or three times a run (its baseline, its answer, its check, and every memory poll): the descriptor
   * is kept, which also means a pid reused after the process exits is never read in its place.
   */
  rssBytes(): number | undefined {
    const pid = this.processPid
    if (pid === undefined || this.dead) return undefined
    try {
      this.statm ??= fs.openSync(`/proc/${pid}/statm`, 'r')
      const length = fs.readSync(this.statm, this.statmText, 0, this.statmText.length, 0)
      const pages = Number(this.statmText.toString('latin1', 0, length).split(' ')[1])
      return Number.isFinite(pages) ? pages * PAGE_BYTES : undefined
    } catch {
      return undefined
    }
  }

  private closeStatm(): void {
    if (this.statm === undefined) return
    fs.close(this.statm, () => undefined)
    this.statm = undefined
  }
}

/**
 * Long-lived pyodide processes, warmed at start (`warmNow`) so no request pays the ~4 s cold start. A process that is
 * killed (timeout, memory, output flood) or poisoned by its run is replaced in the background. At its first start the
 * pool probes bubblewrap (asynchronously) and tells `onProbed` whether its processes run in a network namespace.
 */
export class PyodideProcessPool extends Pool<PyodideProcess> {
  constructor(size: number, warmNow: boolean, bwrapPath: string, onProbed: (wrapper: NetworkWrapper | undefined) => void) {
    let wrapper: NetworkWrapper | undefined
    super({
      size,
      startNow: warmNow,
      prepare: async () => {
        wrapper = await probeNetworkWrapper(bwrapPath)
        onProbed(wrapper)
      },
      start: (onExit) => new PyodideProcess(onExit, wrapper),
      // The process released last: back to back, the one still awake with warm caches (PyodideAdapter.execute).
      take: 'last-released',
      cannotStart: 'pyodide cannot start here',
      disposed: 'the pyodide adapter was disposed',
    })
  }
}
