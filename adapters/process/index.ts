import fs from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import {
  OutputCapture,
  OutputCollector,
  createResult,
  describeError,
  type AdapterCapabilities,
  type Availability,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type Language,
  type RunNeeds,
  type SandboxOpenOptions,
  type ValidationReport,
  inlineFiles,
} from '../../src/core'
import { RunController } from '../../src/runtime'
import { withOptionDefaults } from '../shared/option-schema'
import { reportLimitBytes } from '../shared/python-outputs'
import { PROCESS_OPTIONS_SCHEMA, type ProcessAdapterOptions, type ProcessOptions } from './options'
import { writeEgressBridgeFiles, type EgressBridgeFiles } from './egress-bridge'
import { compilePythonRunner, sandboxCommand, type RunShape, type SandboxPlan } from './sandbox'
import { spawnSandbox, type SpawnedRun } from './spawn-sandbox'
import { stageMounts, type StagedMounts } from './upload-mounts'
import { packFiles } from './tar'
import { UidPool, sweep, warmUids } from './uid-pool'
import { learnInterpreterVersions } from './interpreter-versions'
import { CalibratedShellCost, inputBytesOf, scanShellScript, type ShellCostModel } from '../shared/shell-script'
import { hostSeccompFilter } from '../shared/seccomp-filter'
import { ProcessSandbox } from './persistent-sandbox'
import { claimDirectory, sandboxRoot, sweepDirectories } from './sandbox-directories'
import { detectDataPackages, probeDataPackages } from './data-packages'
import { WarmPython } from './warm-python'
import { checkProcessAvailability } from './availability'
import { LANGUAGES, processCapabilities, type ProcessLanguage } from './capabilities'
import { processRunResult } from './run-result'
import { validateCode } from './validate'

/**
 * What bash costs here, for routing against the native shell (docs/adapters/shell.md): a sandbox's start-up, then
 * real coreutils at a few ns a byte. Measured through the service with bench/shell.ts on the shared 2-core machine
 * of docs/benchmarks.md (p50 47 ms for `echo hi | wc -c`, 59 ms for a 7-stage pipeline over 440 KB).
 */
export const BASH_COST: ShellCostModel = { startupMs: 45, nsPerByteStage: 4 }

export const NAME = 'process'

export type { ProcessAdapterOptions, ProcessOptions } from './options'

/**
 * Real interpreters (the OS's python3, node, bash) under bubblewrap, tier 4: fresh user, pid, net, ipc, uts and
 * mount namespaces, only /usr visible and read-only, a size-capped tmpfs workspace, rlimits set by the launcher, and a
 * host uid of its own per concurrent run so the process cap holds. Time is enforced from outside with SIGKILL to
 * the whole sandbox; when the sandbox's first process exits, the kernel ends everything left in its pid namespace.
 */
export class ProcessAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  readonly capabilities: AdapterCapabilities
  private readonly plan: SandboxPlan
  private readonly uids: UidPool | undefined
  /** What a bash script costs here, its fixed part learned from this adapter's runs (routing against the shell). */
  private readonly bashCost = new CalibratedShellCost(BASH_COST)
  private readonly running = new Set<Promise<unknown>>()
  private runnerCompiled = false
  /** The egress bridge's forwarder and preload, written at the first run with network. */
  private egressFiles?: EgressBridgeFiles
  /** Filled in the background at the first run or availability check (capabilities.engines is this object). */
  private readonly engineVersions: Record<string, string> = {}
  private learningVersions: Promise<void> | undefined
  private readonly sandboxes = new Set<ProcessSandbox>()
  /** Persistent sandboxes: their folders' root and, as root, the uids they claim (one each). */
  private readonly persistent: { root: string; uids?: { first: number; last: number } }
  /** The data packages python3 has, once known (capabilities.packages asks python3 at once if the probe has not answered). */
  private dataPackages: readonly string[] | undefined
  private readonly dataPackagesProbe: Promise<unknown>
  /** The warm data interpreter, made at its first use when the data stack is installed and `warmPython` is on. */
  private warmPython: WarmPython | null | undefined
  private readonly settings: ProcessOptions

  constructor(options: ProcessAdapterOptions = {}) {
    const settings = withOptionDefaults(PROCESS_OPTIONS_SCHEMA, options)
    this.settings = settings
    this.dataPackagesProbe = probeDataPackages(settings.pythonPath).then((found) => (this.dataPackages ??= found))
    const packagesOf = () => (this.dataPackages ??= detectDataPackages(settings.pythonPath))
    const asRoot = process.getuid?.() === 0
    this.uids = asRoot ? UidPool.parse(settings.sandboxUids) : undefined
    const [first, last] = settings.persistentUids.split('-').map(Number) as [number, number]
    this.persistent = { root: sandboxRoot(settings.persistentDir), ...(asRoot ? { uids: { first, last } } : {}) }
    // Compiled once per process; every run and every persistent sandbox's exec gets the same bytes.
    const seccomp = hostSeccompFilter()
    this.plan = {
      bwrapPath: settings.bwrapPath,
      shellPath: settings.shellPath,
      interpreters: { python: settings.pythonPath, javascript: settings.nodePath, bash: settings.bashPath },
      workspaceMb: settings.workspaceMb,
      maxOpenFiles: settings.maxOpenFiles,
      dedicatedUid: asRoot,
      ...(seccomp ? { seccompFilter: seccomp } : {}),
    }
    this.capabilities = processCapabilities({
      asRoot,
      concurrency: this.uids?.capacity,
      packagesOf,
      engines: this.engineVersions,
    })
  }

  private get warm(): WarmPython | undefined {
    if (this.warmPython === undefined) {
      const settings = this.settings
      this.warmPython =
        settings.warmPython && (this.capabilities.packages?.length ?? 0) > 0
          ? new WarmPython({
              bwrapPath: settings.bwrapPath,
              pythonPath: settings.pythonPath,
              workspaceMb: settings.workspaceMb,
              maxOpenFiles: settings.maxOpenFiles,
              asRoot: this.plan.dedicatedUid,
              seccompFilter: this.plan.seccompFilter,
              ...(this.uids ? { uids: warmUids(this.uids) } : {}),
            })
          : null
    }
    return this.warmPython ?? undefined
  }

  /** bash only: the estimate routing weighs against the native shell's. */
  estimateMs(code: string, language: Language, needs?: RunNeeds): number | undefined {
    return language === 'bash' ? this.bashCost.estimate(scanShellScript(code), needs?.inputBytes ?? 0) : undefined
  }

  supportedLanguages(): readonly Language[] {
    return LANGUAGES
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    const started = performance.now()
    this.learningVersions ??= learnInterpreterVersions(this.plan.interpreters, this.engineVersions)
    if (!(LANGUAGES as readonly string[]).includes(request.language)) {
      return createResult('invalid_request', NAME, {
        message: `[execgate] [process] the process adapter runs ${LANGUAGES.join(', ')}, not ${request.language}`,
      })
    }
    try {
      const result = await this.run(request, context, started)
      if (request.language === 'bash' && result.status === 'ok') {
        const files = context.files ?? inlineFiles(request.files)
        this.bashCost.observe(scanShellScript(request.code), inputBytesOf(files), performance.now() - started)
      }
      return result
    } catch (error) {
      return createResult('internal_error', NAME, {
        message: `[execgate] [process] ${describeError(error)}`,
        error: { type: 'InternalError', message: describeError(error) },
      })
    }
  }

  private async run(request: ExecutionRequest, context: ExecutionContext, started: number): Promise<ExecutionResult> {
    const language = request.language as ProcessLanguage
    const output = new OutputCapture(context.policy.outputBytes, context.onOutput)
    // Python's rich outputs arrive while the code runs (output records on fd 5), each checked and passed on at once.
    const outputs = new OutputCollector(context.policy, context.onRichOutput)
    const collectFiles = context.policy.filesystem === 'sandboxed'
    const files = context.files ?? inlineFiles(request.files) ?? []
    const mounts = context.mounts ?? []
    // The warm path has no egress bridge: a run with network rules runs cold. Uploads are bound in on both paths.
    const warm =
      language === 'python' && !collectFiles && context.policy.network === 'none' && this.warm?.wants(request.code, context.policy) === true
    const run = await this.track(
      this.sandboxed(
        {
          language,
          policy: context.policy,
          mode: 'run',
          withFiles: files.length > 0,
          collectFiles,
          warm,
          ...(mounts.length ? { mounts } : {}),
          ...(request.outputs ? { outputs: request.outputs } : {}),
          ...(warm ? {} : await this.egressFor(context)),
        },
        request.code,
        context,
        output,
        {
          filesArchive: files.length > 0 ? packFiles(files) : undefined,
          stdin: request.stdin,
          onOutputRecord: (raw) => void outputs.add(raw),
        },
      ),
    )
    return processRunResult(run, context.policy, output, outputs, { name: NAME, collectFiles, mounts, started })
  }

  /** The run's way out through the egress gateway, when its policy allows any network. */
  private async egressFor(context: ExecutionContext): Promise<Pick<RunShape, 'egress'>> {
    if (!context.egress) return {}
    this.egressFiles ??= writeEgressBridgeFiles()
    const endpoint = await context.egress.endpoint()
    return {
      egress: {
        socketPath: endpoint.socketPath,
        files: this.egressFiles,
        ...(endpoint.caBundlePath ? { caBundlePath: endpoint.caBundlePath } : {}),
      },
    }
  }

  /** Acquires a uid (the wait does not count against the code's time), runs, then makes sure the uid is empty. */
  private async sandboxed(
    shape: RunShape,
    code: string,
    context: ExecutionContext,
    output: OutputCapture,
    extra: { filesArchive?: Buffer; stdin?: string; onOutputRecord?: (raw: unknown) => void },
  ): Promise<SpawnedRun> {
    let uid: number | undefined
    const controller = new RunController(context)
    // The warm interpreter holds its runs' uids itself: its spare for the next run has one already.
    if (shape.warm && this.warm) {
      return this.warm.run(
        {
          code,
          ...extra,
          ...(shape.mounts?.length ? { mounts: shape.mounts } : {}),
          ...(shape.outputs ? { outputs: shape.outputs } : {}),
          policy: shape.policy,
          controller,
          output,
          reportLimitBytes: reportLimitBytes(context.policy),
        },
        context.signal,
        context.deadline,
      )
    }
    if (this.uids) uid = this.uids.tryAcquire()
    if (this.uids && uid === undefined) {
      controller.pauseClock()
      const until = AbortSignal.any([context.signal, AbortSignal.timeout(Math.max(1, Math.ceil(context.deadline - performance.now())))])
      try {
        uid = await this.uids.acquire(until)
      } catch (error) {
        controller.restartClock()
        controller.settle()
        return {
          stoppedFor: context.signal.aborted ? 'cancelled' : 'timeout',
          exitCode: null,
          signal: null,
          report: '',
          archiveCut: false,
          wallMs: 0,
          spawnError: (error as Error).message,
        }
      }
      controller.restartClock()
    }
    let run: SpawnedRun | undefined
    let staged: StagedMounts | undefined
    try {
      this.prepareRunner(shape.language)
      if (shape.mounts?.length) {
        staged = stageMounts(shape.mounts)
        shape = { ...shape, mounts: staged.mounts }
      }
      const command = sandboxCommand(this.plan, shape)
      run = await spawnSandbox({
        ...command,
        uid,
        code,
        ...extra,
        collectFiles: shape.collectFiles,
        controller,
        output,
        reportLimitBytes: reportLimitBytes(context.policy),
        archiveLimitBytes: this.plan.workspaceMb * 2 ** 20 * 2,
      })
      return run
    } finally {
      staged?.remove()
      // A clean exit leaves nothing: the namespace's pid 1 exits only once the kernel has ended everything else
      // in it. A kill may leave stragglers for a moment, and the uid is not reused until they are gone.
      if (uid !== undefined) {
        if (!run || run.stoppedFor || run.signal || run.spawnError) {
          if (await sweep(uid)) this.uids!.release(uid)
        } else {
          this.uids!.release(uid)
        }
      }
    }
  }

  /** Compiles the Python runner once, the first time Python runs. */
  private prepareRunner(language: ProcessLanguage): void {
    if (language === 'python' && this.plan.pythonRunnerPyc === undefined && !this.runnerCompiled) {
      this.runnerCompiled = true
      this.plan.pythonRunnerPyc = compilePythonRunner(this.plan.interpreters.python)
    }
  }

  /**
   * A persistent sandbox (adapters/process/persistent-sandbox.ts): a folder and, as root, a uid and a tmpfs
   * workspace of its own; each exec is a fresh bubblewrap run over that folder.
   */
  async openSandbox(options: SandboxOpenOptions): Promise<ProcessSandbox> {
    const directory = await claimDirectory(this.persistent.root, options.id, {
      ...(this.persistent.uids ? { uids: this.persistent.uids } : {}),
      workspaceMb: this.plan.workspaceMb,
    })
    const sandbox: ProcessSandbox = new ProcessSandbox(
      options.id,
      this.plan,
      directory,
      Math.min(options.limits.maxFileBytes, this.plan.workspaceMb * 2 ** 20),
      (language) => this.prepareRunner(language),
      () => this.sandboxes.delete(sandbox),
      // Each exec whose policy allows network gets its own way out, as a one-shot run does.
      (context) => this.egressFor(context),
    )
    this.sandboxes.add(sandbox)
    return sandbox
  }

  /** Removes the folders (and their mounts and processes) of sandboxes whose execgate process is gone. */
  sweepSandboxes(): Promise<number> {
    return sweepDirectories(this.persistent.root)
  }

  private track<T>(work: Promise<T>): Promise<T> {
    this.running.add(work)
    return work.finally(() => this.running.delete(work))
  }

  /** Compiles the code with the real interpreter, in the same sandbox (`bash -n`, `compile`, `new vm.Script`). */
  validate(code: string, language: Language): Promise<ValidationReport> {
    return validateCode(code, language, NAME, (checked, policy, context, output) =>
      this.track(
        this.sandboxed({ language: checked, policy, mode: 'check', withFiles: false, collectFiles: false }, code, context, output, {}),
      ),
    )
  }

  /** Says exactly what is missing: bwrap, dash, an interpreter, or user namespaces; then runs a probe. */
  checkAvailability(): Promise<Availability> {
    return checkProcessAvailability(this.plan, {
      probe: (context) => this.execute({ language: 'bash', code: 'echo ready' }, context),
      versions: () => this.learningVersions,
      perRunUid: this.uids !== undefined,
    })
  }

  /** How the warm data interpreter's runs got their sandbox (from the spare, or made on demand); undefined before it starts. */
  warmRuns(): { readonly fromSpare: number; readonly madeOnDemand: number } | undefined {
    return this.warmPython ? { ...this.warmPython.runCounts } : undefined
  }

  /**
   * Starts the warm data interpreter now rather than on the first data run (benchmarks, a service that expects data
   * work). Not `warmUp`: every execgate with the process tier would then pay ~1 s of CPU and ~160 MB for it.
   */
  async startWarmPython(): Promise<boolean> {
    return (await this.warm?.start()) ?? false
  }

  /**
   * The uid of the warm interpreter's spare: the sandbox made ahead for the next data run (its processes wait, with
   * no code in them, as that uid). Tests that look for a run's leftovers tell them apart by it.
   */
  warmSpareUid(): number | undefined {
    return this.warm?.spareUid
  }

  async dispose(): Promise<void> {
    await Promise.allSettled([
      this.dataPackagesProbe,
      this.learningVersions,
      ...this.running,
      ...[...this.sandboxes].map((sandbox) => sandbox.close()),
    ])
    await this.warmPython?.dispose()
    if (this.plan.pythonRunnerPyc) fs.rmSync(path.dirname(this.plan.pythonRunnerPyc), { recursive: true, force: true })
    this.plan.pythonRunnerPyc = undefined
  }
}

export function createProcessAdapter(options?: ProcessAdapterOptions): ProcessAdapter {
  return new ProcessAdapter(options)
}
