import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import type { Readable, Writable } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import type { FileMount, SecurityPolicy } from '../../src/core'
import type { RunController } from '../../src/runtime'
import { stopReasonFor, type StopReason } from '../shared/stop-reason'
import { parseReport, ReportChannel } from '../shared/run-report'
import { pythonRunner } from '../shared/interpreter-runners'
import { FD } from './runners'
import { zygoteSource } from './warm-zygote-source'
import { zygoteArgs } from './warm-zygote-args'
import type { SpawnedRun } from './spawn-sandbox'
import { linkUploads } from './upload-mounts'
import { deliverStream, zygoteEventLines, type LiveRun, type ZygoteEvent } from './warm-run-events'
import { exitOf, goMessage, writeRunFiles, type WarmRunOptions } from './warm-run-go'

/** Code that imports one of these is worth the warm interpreter, which has them imported already. */
const DATA_IMPORT = /^[ \t]*(?:import|from)[ \t]+(?:numpy|pandas|scipy|matplotlib|sklearn|openpyxl)\b/m

/** The runner as the warm child runs it: the code comes in `_CODE`, the report goes to fd 5 as on the cold path. */
const WARM_RUNNER = pythonRunner({
  prelude: '',
  load: '_CODE',
  // Only pid 1 of the run reports: a process the code forked carries fd 5 too, and its report would garble the run's.
  send:
    `def _send(doc):\n    if os.getpid() != 1:\n        return\n    data = ` +
    `doc.encode('utf-8', 'surrogatepass')\n    while data:\n        data = ` +
    `data[os.write(${FD.result}, data):]`,
  streamOutputs: true,
})

const ZYGOTE = zygoteSource(WARM_RUNNER)

/** Memory a run needs beyond what the zygote already holds, before the warm path is worth offering it. */
const HEADROOM_MIB = 64
const START_TIMEOUT_MS = 60_000
const CLOSE_GRACE_MS = 2000
/** After an answer on closed streams, how long the run's processes may take to exit before they are killed. */
const LINGER_KILL_MS = 500

export interface WarmPythonPlan {
  bwrapPath: string
  pythonPath: string
  workspaceMb: number
  maxOpenFiles: number
  /** Root: the zygote keeps CAP_SETUID/SETGID/KILL so each child can become its run's own host uid. */
  asRoot: boolean
  /** The cold runs' seccomp filter (classic BPF), installed in each run's pid 1 after its set-up. */
  seccompFilter?: Buffer
  /**
   * As root, the host's uid pool: each run (and the one spare waiting for the next run) holds a uid of its own from
   * it, released when the run's processes are gone (swept first after a kill).
   */
  uids?: WarmUids
}

export interface WarmUids {
  tryAcquire(): number | undefined
  acquire(signal: AbortSignal): Promise<number>
  release(uid: number): void
  /** Kills what the uid still runs; true once nothing is left. */
  sweep(uid: number): Promise<boolean>
}

/** A run's sandbox made ahead of its code: C and G forked, namespaces and mounts made, G waiting for its go. */
interface Spare {
  id: string
  uid?: number
  folder: string
  /** The zygote that made it (a spare dies with its zygote). */
  zygote: ChildProcess
}

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
  /** Runs that took the spare made ahead of them, and runs that had to make their own (no spare ready, or its zygote gone). */
  readonly runCounts = { fromSpare: 0, madeOnDemand: 0 }
  private failure?: string
  private spare?: Spare
  /** Spares whose zygote or set-up died before a run took them: their uid is swept and released. */
  private readonly spareIds = new Set<string>()
  private disposed = false

  constructor(private readonly plan: WarmPythonPlan) {}

  /** Whether a run should take the warm path: Python importing the data stack, with room above the zygote's memory. */
  wants(code: string, policy: SecurityPolicy): boolean {
    if (!DATA_IMPORT.test(code)) return false
    return this.dataKiB === 0 || policy.memoryMb > this.dataKiB / 1024 + HEADROOM_MIB
  }

  /** The uid the spare made for the next run holds (C and G waiting, no code in them), if there is one. */
  get spareUid(): number | undefined {
    return this.spare?.uid
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
    const args = zygoteArgs({ asRoot: this.plan.asRoot, pythonPath: this.plan.pythonPath, runsFolder, program: ZYGOTE })
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
      const events = child.stdio[3] as Readable
      events.setEncoding('utf8')
      events.on(
        'data',
        zygoteEventLines((event) => {
          if (event.ready) {
            ready = true
            clearTimeout(timer)
            this.dataKiB = event.dataKiB ?? 0
            this.failure = undefined
            resolve(true)
            this.refill()
          } else if (event.id) this.onEvent(event.id, event)
        }),
      )
      child.on('exit', (code, signal) => {
        fail(`it exited (${code ?? signal})`)
        if (this.zygote === child) this.zygote = undefined
        // Runs in flight lose their sandbox with it: each ends as a crashed run (its exit unknown).
        for (const run of this.runs.values()) run.done(null)
        this.runs.clear()
        if (this.spare?.zygote === child) this.dropSpare(this.spare)
      })
      child.unref()
      for (const stream of [child.stdin, child.stderr, events]) (stream as unknown as { unref?: () => void } | null)?.unref?.()
    })
  }

  private onEvent(id: string, event: ZygoteEvent): void {
    const run = this.runs.get(id)
    if (!run) {
      // A spare that died before a run took it (its set-up failed): its uid is swept and released.
      if (event.exit !== undefined && this.spare?.id === id) this.dropSpare(this.spare)
      return
    }
    if (event.exit !== undefined) {
      this.runs.delete(id)
      run.done(event.exit)
      return
    }
    if (event.closed) return run.closed()
    deliverStream(run, event)
  }

  /** Makes the spare for the next run, when there is none and a uid is free now (never waits for one). */
  private refill(): void {
    if (this.spare || this.disposed || !this.zygote) return
    const uid = this.plan.uids?.tryAcquire()
    if (this.plan.uids && uid === undefined) return
    this.spare = this.prepare(uid)
  }

  /**
   * Sends the zygote a prepare: C and G are made for a run whose id, folder and uid are chosen now. Uploads to bind in
   * (a run that has them makes its own, at once) are linked into the folder first: C binds them before it hides /runs.
   */
  private prepare(uid: number | undefined, uploads: readonly FileMount[] = []): Spare {
    const id = `r${process.pid}-${++this.sequence}`
    const folder = path.join(this.folder!, 'runs', id)
    fs.mkdirSync(folder, { mode: 0o700 })
    // Where the uploads of the run that takes this spare are linked at its go (C keeps it in sight until then).
    fs.mkdirSync(path.join(folder, 'up'), { mode: 0o700 })
    if (uid !== undefined) fs.chownSync(path.join(folder, 'up'), uid, uid)
    const mounts = uploads.length ? linkUploads(uploads, folder).map((mount, index) => ({ path: mount.path, file: String(index) })) : []
    if (uid !== undefined) fs.chownSync(folder, uid, uid)
    const zygote = this.zygote!
    const request = {
      prepare: id,
      workspaceMb: this.plan.workspaceMb,
      ...(uid === undefined ? {} : { uid }),
      ...(mounts.length ? { mounts } : {}),
    }
    ;(zygote.stdin as Writable).write(`${JSON.stringify(request)}\n`)
    this.spareIds.add(id)
    return { id, uid, folder, zygote }
  }

  /** A spare no run will take (its zygote died, or its set-up failed): its uid swept and released, its folder removed. */
  private dropSpare(spare: Spare): void {
    if (this.spare === spare) this.spare = undefined
    this.spareIds.delete(spare.id)
    fs.rm(spare.folder, { recursive: true, force: true }, () => {})
    if (spare.uid !== undefined) void this.releaseUid(spare.uid, true)
  }

  private async releaseUid(uid: number, sweepFirst: boolean): Promise<void> {
    const uids = this.plan.uids!
    if (!sweepFirst || (await uids.sweep(uid))) uids.release(uid)
  }

  /** A uid for a run that found no spare (the wait does not count against the code's time); undefined without a pool. */
  private async uidFor(controller: RunController, signal: AbortSignal, deadline: number): Promise<{ uid?: number } | { error: string }> {
    const uids = this.plan.uids
    if (!uids) return {}
    const uid = uids.tryAcquire()
    if (uid !== undefined) return { uid }
    controller.pauseClock()
    try {
      const until = AbortSignal.any([signal, AbortSignal.timeout(Math.max(1, Math.ceil(deadline - performance.now())))])
      return { uid: await uids.acquire(until) }
    } catch (error) {
      return { error: (error as Error).message }
    } finally {
      controller.restartClock()
    }
  }

  /**
   * One run in a fresh child of the zygote: the spare made for it ahead of time, or one made now; resolves like
   * spawnSandbox (never rejects). The run's uid is released when its processes are gone, which may be after the
   * answer: G closes its streams before the kernel has torn it down.
   */
  async run(options: WarmRunOptions, signal: AbortSignal, deadline: number): Promise<SpawnedRun> {
    const started = performance.now()
    const { controller } = options
    controller.pauseClock()
    const up = await this.start()
    controller.restartClock()
    const failed = (spawnError: string, stoppedFor?: StopReason): SpawnedRun => {
      controller.settle()
      return { ...(stoppedFor ? { stoppedFor } : {}), exitCode: null, signal: null, report: '', archiveCut: false, spawnError, wallMs: 0 }
    }
    if (!up || !this.zygote) return failed(this.failure ?? 'the warm python is not running')
    // A run with uploads takes the spare too: they are linked into its up/ folder now and bound in by G at its go.
    const uploads = options.mounts ?? []
    let spare = this.spare?.zygote === this.zygote ? this.spare : undefined
    let goMounts: { path: string; file: string }[] = []
    if (spare) {
      this.spare = undefined
      this.runCounts.fromSpare++
    } else this.runCounts.madeOnDemand++
    if (!spare) {
      const claimed = await this.uidFor(controller, signal, deadline)
      if ('error' in claimed) return failed(claimed.error, signal.aborted ? 'cancelled' : 'timeout')
      if (!this.zygote) {
        if (claimed.uid !== undefined) this.plan.uids!.release(claimed.uid)
        return failed(this.failure ?? 'the warm python is not running')
      }
      spare = this.prepare(claimed.uid)
    }
    if (uploads.length) {
      goMounts = linkUploads(uploads, path.join(spare.folder, 'up')).map((mount, index) => ({ path: mount.path, file: String(index) }))
    }
    this.spareIds.delete(spare.id)
    const { id, folder, uid } = spare
    writeRunFiles(folder, options, uid)
    const go = goMessage(id, options, {
      goMounts,
      uid,
      seccompFilter: this.plan.seccompFilter,
      workspaceMb: this.plan.workspaceMb,
      maxOpenFiles: this.plan.maxOpenFiles,
    })
    const zygote = spare.zygote
    const send = (message: unknown) => (zygote.stdin as Writable).write(`${JSON.stringify(message)}\n`)
    return new Promise((resolve) => {
      let stoppedFor: StopReason | undefined
      let graceTimer: NodeJS.Timeout | undefined
      let answered = false
      let exited = false
      const answer = (status: number | null) => {
        if (answered || !controller.settle()) return
        answered = true
        clearTimeout(graceTimer)
        for (const stream of ['o', 'e'] as const) {
          const rest = live.decoders[stream].end()
          if (rest) options.output.write(stream === 'o' ? 'stdout' : 'stderr', rest)
        }
        resolve({
          stoppedFor,
          ...exitOf(status),
          report: live.report.end(),
          archiveCut: false,
          wallMs: performance.now() - started,
        })
        // The next run's sandbox is made now, while no caller waits on this one.
        setImmediate(() => this.refill())
      }
      const live: LiveRun = {
        output: options.output,
        decoders: { o: new StringDecoder('utf8'), e: new StringDecoder('utf8') },
        report: new ReportChannel(options.onOutputRecord),
        reportBytes: 0,
        reportLimit: options.reportLimitBytes,
        onOverflow: () => controller.stop('output_limit'),
        closed: () => {
          // The runner closes its streams after its report: with a report, the run is over (it exits 0). Without one
          // (the code closed them itself), the exit decides. Whatever lingers is killed if the exit is slow to come.
          if (stoppedFor || !parseReport(live.report.reportSoFar)) return
          answer(0)
          graceTimer = setTimeout(() => send({ kill: id }), LINGER_KILL_MS)
        },
        done: (status) => {
          if (exited) return
          exited = true
          clearTimeout(graceTimer)
          this.runs.delete(id)
          answer(status)
          fs.rm(folder, { recursive: true, force: true }, () => {})
          // The uid goes back once nothing of the run is left: swept first after a kill or a crash.
          if (uid !== undefined) void this.releaseUid(uid, status === null || status !== 0 || stoppedFor !== undefined)
        },
      }
      this.runs.set(id, live)
      send(go)
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
    this.disposed = true
    const zygote = this.zygote
    this.zygote = undefined
    if (zygote && zygote.exitCode === null) {
      const exited = new Promise((resolve) => zygote.once('exit', resolve))
      zygote.kill('SIGKILL')
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2000))])
    }
    if (this.spare) this.dropSpare(this.spare)
    if (this.folder) fs.rmSync(this.folder, { recursive: true, force: true })
    this.folder = undefined
  }
}
