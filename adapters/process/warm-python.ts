import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import type { Readable, Writable } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import type { FileMount, OutputCapture, SecurityPolicy } from '../../src/core'
import type { RunController } from '../../src/runtime'
import { stopReasonFor, type StopReason } from '../shared/stop-reason'
import { pythonRunner } from '../shared/interpreter-runners'
import { runnerOutputLimits } from '../shared/python-outputs'
import { FD } from './runners'
import { zygoteSource } from './warm-zygote-source'
import type { SpawnedRun } from './spawn-sandbox'
import { linkUploads } from './upload-mounts'

/** Code that imports one of these is worth the warm interpreter, which has them imported already. */
const DATA_IMPORT = /^[ \t]*(?:import|from)[ \t]+(?:numpy|pandas|scipy|matplotlib|sklearn|openpyxl)\b/m

/** The runner as the warm child runs it: the code comes in `_CODE`, the report goes to fd 5 as on the cold path. */
const WARM_RUNNER = pythonRunner({
  prelude: '',
  load: '_CODE',
  // Only pid 1 of the run reports: a process the code forked carries fd 5 too, and its report would garble the run's.
  send: `def _send(doc):\n    if os.getpid() != 1:\n        return\n    data = doc.encode('utf-8', 'surrogatepass')\n    while data:\n        data = data[os.write(${FD.result}, data):]`,
})

const ZYGOTE = zygoteSource(WARM_RUNNER)

/** Memory a run needs beyond what the zygote already holds, before the warm path is worth offering it. */
const HEADROOM_MIB = 64
const START_TIMEOUT_MS = 60_000
const CLOSE_GRACE_MS = 2000
const OVERFLOW_DRAIN_BYTES = 1024 * 1024

export interface WarmPythonPlan {
  bwrapPath: string
  pythonPath: string
  workspaceMb: number
  maxOpenFiles: number
  /** Root: the zygote keeps CAP_SETUID/SETGID/KILL so each child can become its run's own host uid. */
  asRoot: boolean
  /** The cold runs' seccomp filter (classic BPF), installed in each run's pid 1 after its set-up. */
  seccompFilter?: Buffer
}

export interface WarmRunOptions {
  uid?: number
  code: string
  filesArchive?: Buffer
  /** Uploads to bind read-only into the run's workspace (linked into its folder, bound by the child before it hides /runs). */
  mounts?: readonly FileMount[]
  stdin?: string
  policy: SecurityPolicy
  controller: RunController
  output: OutputCapture
  reportLimitBytes: number
}

interface LiveRun {
  output: OutputCapture
  decoders: Record<'o' | 'e', StringDecoder>
  report: Buffer[]
  reportBytes: number
  reportLimit: number
  onOverflow: () => void
  done: (status: number | null) => void
}

/** Host files that are not secrets and the data stack reads: the loader's cache, libblas's alternative, matplotlibrc, fonts. */
const HOST_FILES = ['/etc/ld.so.cache', '/etc/alternatives', '/etc/matplotlibrc', '/etc/fonts'].filter((file) => fs.existsSync(file))

/**
 * A pre-started python3 with the data stack imported, forking a fresh sandboxed child per run (the zygote,
 * adapters/process/warm-zygote-source.ts). Started on first use; restarted after it dies; files for a run come
 * through a per-run folder the child copies into its own tmpfs and then hides.
 */
export class WarmPython {
  private zygote?: ChildProcess
  private starting?: Promise<boolean>
  private readonly runs = new Map<string, LiveRun>()
  private folder?: string
  private dataKiB = 0
  private sequence = 0
  private failure?: string

  constructor(private readonly plan: WarmPythonPlan) {}

  /** Whether a run should take the warm path: Python importing the data stack, with room above the zygote's memory. */
  wants(code: string, policy: SecurityPolicy): boolean {
    if (!DATA_IMPORT.test(code)) return false
    return this.dataKiB === 0 || policy.memoryMb > this.dataKiB / 1024 + HEADROOM_MIB
  }

  /** Why the warm interpreter could not start, if it could not. */
  get unavailableReason(): string | undefined {
    return this.failure
  }

  /** Starts the zygote (once; again after it died). Resolves false when it cannot start. */
  start(): Promise<boolean> {
    if (this.zygote && this.zygote.exitCode === null && !this.starting) return Promise.resolve(true)
    this.starting ??= this.launch().finally(() => (this.starting = undefined))
    return this.starting
  }

  private launch(): Promise<boolean> {
    this.folder ??= fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-warm-'))
    fs.chmodSync(this.folder, 0o711)
    const runsFolder = path.join(this.folder, 'runs')
    fs.mkdirSync(runsFolder, { recursive: true, mode: 0o711 })
    const namespaces = this.plan.asRoot
      ? [
          '--unshare-pid',
          '--unshare-net',
          '--unshare-ipc',
          '--unshare-uts',
          '--unshare-cgroup-try',
          '--cap-add',
          'CAP_SETUID',
          '--cap-add',
          'CAP_SETGID',
          '--cap-add',
          'CAP_KILL',
        ]
      : ['--unshare-all']
    const args = [
      ...namespaces,
      '--die-with-parent',
      '--new-session',
      '--hostname',
      'sandbox',
      '--clearenv',
      '--setenv',
      'PATH',
      '/usr/bin:/bin',
      '--setenv',
      'HOME',
      '/tmp',
      '--setenv',
      'LANG',
      'C.UTF-8',
      '--setenv',
      'MPLBACKEND',
      'Agg',
      '--setenv',
      'MPLCONFIGDIR',
      '/tmp/matplotlib',
      '--setenv',
      'XDG_CACHE_HOME',
      '/tmp/cache',
      // One BLAS thread: a fork copies only the calling thread, and each run's process cap counts threads.
      '--setenv',
      'OPENBLAS_NUM_THREADS',
      '1',
      '--setenv',
      'OMP_NUM_THREADS',
      '1',
      '--ro-bind',
      '/usr',
      '/usr',
      '--tmpfs',
      '/usr/local',
      '--symlink',
      'usr/bin',
      '/bin',
      '--symlink',
      'usr/lib',
      '/lib',
      '--symlink',
      'usr/lib64',
      '/lib64',
      ...HOST_FILES.flatMap((file) => ['--ro-bind', file, file]),
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--size',
      String(64 * 2 ** 20),
      '--tmpfs',
      '/tmp',
      '--dir',
      '/workspace',
      '--ro-bind',
      runsFolder,
      '/runs',
      '--chdir',
      '/',
      // The program as an argument, not a file: nothing of it sits in the sandbox's filesystem for a run to read.
      this.plan.pythonPath,
      '-I',
      '-B',
      '-u',
      '-c',
      ZYGOTE,
    ]
    return new Promise((resolve) => {
      let child: ChildProcess
      try {
        child = spawn(this.plan.bwrapPath, args, { stdio: ['pipe', 'ignore', 'pipe', 'pipe'], env: {} })
      } catch (error) {
        this.failure = `the warm python could not start: ${(error as Error).message}`
        resolve(false)
        return
      }
      this.zygote = child
      let stderr = ''
      let ready = false
      const timer = setTimeout(() => fail(`it did not report ready within ${START_TIMEOUT_MS} ms`), START_TIMEOUT_MS)
      const fail = (why: string) => {
        if (ready) return
        clearTimeout(timer)
        this.failure = `the warm python could not start: ${why}${stderr ? ` (${stderr.trim().split('\n').slice(-3).join(' | ')})` : ''}`
        child.kill('SIGKILL')
        resolve(false)
      }
      child.stderr!.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-4096)))
      child.on('error', (error) => fail(error.message))
      ;(child.stdin as Writable).on('error', () => {})
      let pending = ''
      const events = child.stdio[3] as Readable
      events.setEncoding('utf8')
      events.on('data', (text: string) => {
        pending += text
        let newline: number
        while ((newline = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, newline)
          pending = pending.slice(newline + 1)
          const event = JSON.parse(line) as {
            ready?: boolean
            dataKiB?: number
            id?: string
            s?: 'o' | 'e' | 'r'
            d?: string
            exit?: number
          }
          if (event.ready) {
            ready = true
            clearTimeout(timer)
            this.dataKiB = event.dataKiB ?? 0
            this.failure = undefined
            resolve(true)
          } else if (event.id) this.onEvent(event.id, event)
        }
      })
      child.on('exit', (code, signal) => {
        fail(`it exited (${code ?? signal})`)
        if (this.zygote === child) this.zygote = undefined
        // Runs in flight lose their sandbox with it: each ends as a crashed run (its exit unknown).
        for (const run of this.runs.values()) run.done(null)
        this.runs.clear()
      })
      child.unref()
      for (const stream of [child.stdin, child.stderr, events]) (stream as unknown as { unref?: () => void } | null)?.unref?.()
    })
  }

  private onEvent(id: string, event: { s?: 'o' | 'e' | 'r'; d?: string; exit?: number }): void {
    const run = this.runs.get(id)
    if (!run) return
    if (event.exit !== undefined) {
      this.runs.delete(id)
      run.done(event.exit)
      return
    }
    const bytes = Buffer.from(event.d ?? '', 'base64')
    if (event.s === 'r') {
      if (run.reportBytes + bytes.length > run.reportLimit) return run.onOverflow()
      run.report.push(bytes)
      run.reportBytes += bytes.length
      return
    }
    const stream = event.s === 'o' ? 'stdout' : 'stderr'
    const text = run.decoders[event.s!].write(bytes)
    if (!run.output.write(stream, text) && run.output.totalBytes > run.output.limitBytes + OVERFLOW_DRAIN_BYTES) run.onOverflow()
  }

  /** One run in a fresh child of the zygote; resolves like spawnSandbox (never rejects). */
  async run(options: WarmRunOptions): Promise<SpawnedRun> {
    const started = performance.now()
    const { controller } = options
    controller.pauseClock()
    const up = await this.start()
    controller.restartClock()
    if (!up || !this.zygote) {
      controller.settle()
      return {
        exitCode: null,
        signal: null,
        report: '',
        archiveCut: false,
        spawnError: this.failure ?? 'the warm python is not running',
        wallMs: 0,
      }
    }
    const id = `r${process.pid}-${++this.sequence}`
    const folder = path.join(this.folder!, 'runs', id)
    fs.mkdirSync(folder, { mode: 0o700 })
    fs.writeFileSync(path.join(folder, 'code'), options.code)
    if (options.stdin !== undefined) fs.writeFileSync(path.join(folder, 'stdin'), options.stdin)
    if (options.filesArchive) fs.writeFileSync(path.join(folder, 'in.tar'), options.filesArchive)
    if (options.uid !== undefined)
      for (const file of fs.readdirSync(folder)) fs.chownSync(path.join(folder, file), options.uid, options.uid)
    // After the chown above: the links are the store's own inodes, which keep their owner (and 0644).
    const mounts = options.mounts?.length
      ? linkUploads(options.mounts, folder).map((mount, index) => ({ path: mount.path, file: String(index) }))
      : []
    if (options.uid !== undefined) fs.chownSync(folder, options.uid, options.uid)
    const policy = options.policy
    const request = {
      id,
      ...(options.uid === undefined ? {} : { uid: options.uid }),
      workspaceMb: this.plan.workspaceMb,
      allowedImports: policy.allowedImports,
      outputs: runnerOutputLimits(policy),
      ...(mounts.length ? { mounts } : {}),
      ...(this.plan.seccompFilter ? { seccomp: this.plan.seccompFilter.toString('base64') } : {}),
      limits: {
        dataBytes: policy.memoryMb * 2 ** 20,
        cpuSeconds: Math.max(1, Math.ceil(policy.cpuTimeMs / 1000)),
        fileBytes: this.plan.workspaceMb * 2 ** 20,
        openFiles: this.plan.maxOpenFiles,
        // The supervisor (C) and pid 1 (G) count too; only a uid of the run's own makes the cap this run's alone.
        ...(options.uid === undefined ? {} : { processes: policy.maxProcesses + 2 }),
      },
    }
    const zygote = this.zygote
    return new Promise((resolve) => {
      let stoppedFor: StopReason | undefined
      let graceTimer: NodeJS.Timeout | undefined
      const live: LiveRun = {
        output: options.output,
        decoders: { o: new StringDecoder('utf8'), e: new StringDecoder('utf8') },
        report: [],
        reportBytes: 0,
        reportLimit: options.reportLimitBytes,
        onOverflow: () => controller.stop('output_limit'),
        done: (status) => {
          if (!controller.settle()) return
          clearTimeout(graceTimer)
          this.runs.delete(id)
          for (const stream of ['o', 'e'] as const) {
            const rest = live.decoders[stream].end()
            if (rest) options.output.write(stream === 'o' ? 'stdout' : 'stderr', rest)
          }
          fs.rm(folder, { recursive: true, force: true }, () => {})
          const killedBy = status !== null && status > 128 ? status - 128 : undefined
          resolve({
            stoppedFor,
            exitCode: status === null || killedBy !== undefined ? null : status,
            signal: status === null ? 'SIGKILL' : killedBy !== undefined ? signalName(killedBy) : null,
            report: Buffer.concat(live.report).toString('utf8'),
            archiveCut: false,
            wallMs: performance.now() - started,
          })
        },
      }
      this.runs.set(id, live)
      const send = (message: unknown) => (zygote.stdin as Writable).write(`${JSON.stringify(message)}\n`)
      send(request)
      controller.start({
        onStop: (reason) => {
          stoppedFor ??= stopReasonFor(reason, options.output)
          send({ kill: id })
          graceTimer ??= setTimeout(() => live.done(null), CLOSE_GRACE_MS)
        },
      })
    })
  }

  async dispose(): Promise<void> {
    const zygote = this.zygote
    this.zygote = undefined
    if (zygote && zygote.exitCode === null) {
      const exited = new Promise((resolve) => zygote.once('exit', resolve))
      zygote.kill('SIGKILL')
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2000))])
    }
    if (this.folder) fs.rmSync(this.folder, { recursive: true, force: true })
    this.folder = undefined
  }
}

function signalName(number: number): NodeJS.Signals | null {
  const entry = Object.entries(os.constants.signals).find(([, value]) => value === number)
  return (entry?.[0] as NodeJS.Signals | undefined) ?? null
}
