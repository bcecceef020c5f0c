import fs from 'node:fs'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import {
  OutputCapture,
  OutputCollector,
  createResult,
  describeError,
  enforcementTable,
  valueBytes,
  type AdapterCapabilities,
  type Availability,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type ExecutionStatus,
  type Language,
  type RunNeeds,
  type SandboxOpenOptions,
  type SecurityPolicy,
  type ValidationReport,
  inlineFiles,
} from '../../src/core'
import { RunController } from '../../src/runtime'
import { withOptionDefaults } from '../shared/option-schema'
import { reportLimitBytes } from '../shared/python-outputs'
import { collectedOutputs } from '../shared/run-report'
import { PROCESS_OPTIONS_SCHEMA, type ProcessAdapterOptions, type ProcessOptions } from './options'
import { writeEgressBridgeFiles, type EgressBridgeFiles } from './egress-bridge'
import { compilePythonRunner, sandboxCommand, type RunShape, type SandboxPlan } from './sandbox'
import { spawnSandbox, type SpawnedRun } from './spawn-sandbox'
import { stageMounts, type StagedMounts } from './upload-mounts'
import { packFiles, unpackFiles } from './tar'
import { UidPool, sweep } from './uid-pool'
import { classifyExit } from './classify'
import { learnInterpreterVersions } from './interpreter-versions'
import { CalibratedShellCost, inputBytesOf, scanShellScript, type ShellCostModel } from '../shared/shell-script'
import { hostSeccompFilter, seccompSummary } from '../shared/seccomp-filter'
import { ProcessSandbox } from './persistent-sandbox'
import { claimDirectory, sandboxRoot, sweepDirectories } from './sandbox-directories'
import { detectDataPackages, probeDataPackages } from './data-packages'
import { WarmPython, type WarmUids } from './warm-python'

/**
 * What bash costs here, for routing against the native shell (docs/adapters/shell.md): a sandbox's start-up, then
 * real coreutils at a few ns a byte. Measured through the service with bench/shell.ts on the shared 2-core machine
 * of docs/benchmarks.md (p50 47 ms for `echo hi | wc -c`, 59 ms for a 7-stage pipeline over 440 KB).
 */
export const BASH_COST: ShellCostModel = { startupMs: 45, nsPerByteStage: 4 }

export const NAME = 'process'

export type { ProcessAdapterOptions, ProcessOptions } from './options'

type ProcessLanguage = 'python' | 'javascript' | 'bash'
const LANGUAGES: readonly ProcessLanguage[] = ['python', 'javascript', 'bash']

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
    const syscallFilter = seccompSummary()
    this.capabilities = {
      languages: LANGUAGES,
      tier: 4,
      isolation:
        `bubblewrap: user/pid/net/ipc/uts/mount namespaces, read-only /usr, tmpfs workspace, ` +
        `rlimits, own uid${syscallFilter ? ', seccomp filter' : ''}`,
      enforcement: enforcementTable({
        wallTime: 'hard',
        cpuTime: 'hard',
        memory: 'hard',
        output: 'hard',
        network: 'hard',
        filesystem: 'hard',
        // The policy's static check runs before the adapter; the interpreter itself imports anything on disk.
        imports: 'soft',
        // RLIMIT_NPROC counts per host uid: exact only with a uid of the run's own, which needs root to switch to.
        processes: asRoot ? 'hard' : 'none',
      }),
      sessions: false,
      hostFunctions: false,
      // As root each run needs a uid of its own: the pool's size is how many can go at once (admission's slots).
      ...(this.uids ? { concurrency: this.uids.capacity } : {}),
      workspace: true,
      fileMounts: true,
      streaming: true,
      // Only through the egress gateway's proxy socket bound into the run's own network namespace (egress-bridge.ts).
      network: true,
      cancellable: true,
      sandboxes: true,
      get packages() {
        return packagesOf()
      },
      engines: this.engineVersions,
      ...(syscallFilter ? { syscallFilter } : {}),
    }
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
    const outcome = classifyExit(run, context.policy, output.finish().stderr)
    const returned = outcome.status === 'ok' || outcome.status === 'error' ? outcome.value : undefined
    const captured = output.finish(valueBytes(returned))
    const rich = collectedOutputs(outputs, outcome, NAME)
    const status: ExecutionStatus = rich.status === 'ok' && captured.truncated ? 'output_limit' : rich.status
    const unpacked = collectFiles && run.filesArchive && !run.stoppedFor ? unpackFiles(run.filesArchive) : undefined
    const mounted = new Set(mounts.map((mount) => mount.path))
    const workspace = unpacked && { ...unpacked, files: unpacked.files.filter((file) => !mounted.has(file.path)) }
    return createResult(status, NAME, {
      ...captured,
      value: returned,
      error: outcome.error,
      ...(rich.message ? { message: rich.message } : {}),
      ...(rich.outputs ? { outputs: rich.outputs } : {}),
      files: workspace?.files,
      ...(workspace?.skipped.length || run.archiveCut
        ? {
            message:
              outcome.error?.message ??
              'workspace: ' +
                [
                  ...(workspace?.skipped ?? []),
                  ...(run.archiveCut ? ['the workspace archive passed its size limit; later files were lost'] : []),
                ].join('; '),
          }
        : {}),
      usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes },
    })
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
  async validate(code: string, language: Language): Promise<ValidationReport> {
    const report = (issues: ValidationReport['issues']): ValidationReport => ({
      valid: !issues.some((item) => item.severity === 'error'),
      language,
      validator: NAME,
      issues,
      implemented: true,
    })
    if (!(LANGUAGES as readonly string[]).includes(language))
      return report([
        { severity: 'error', code: 'unsupported', message: `the process adapter runs ${LANGUAGES.join(', ')}, not ${language}` },
      ])
    const policy: SecurityPolicy = {
      wallTimeMs: 5000,
      cpuTimeMs: 5000,
      memoryMb: 256,
      outputBytes: 64 * 1024,
      network: 'none',
      filesystem: 'none',
      allowedImports: [],
      hostCalls: { maxCount: 0, maxTotalMs: 0 },
      maxProcesses: 32,
      maxOutputs: 0,
      outputsBytes: 0,
      required: [],
    }
    const context: ExecutionContext = {
      traceId: 'process-validate',
      policy,
      signal: new AbortController().signal,
      deadline: performance.now() + policy.wallTimeMs,
    }
    const output = new OutputCapture(policy.outputBytes)
    const run = await this.track(
      this.sandboxed(
        { language: language as ProcessLanguage, policy, mode: 'check', withFiles: false, collectFiles: false },
        code,
        context,
        output,
        {},
      ),
    )
    const stderr = output.finish().stderr.trim()
    const outcome = classifyExit(run, policy, stderr)
    if (outcome.status === 'ok') return report([])
    if (outcome.status !== 'error')
      return {
        ...report([{ severity: 'warning', code: 'validator_unavailable', message: outcome.error?.message ?? outcome.status }]),
        implemented: false,
      }
    return report([
      {
        severity: 'error',
        code: 'syntax',
        message: outcome.error?.message || stderr.split('\n').pop() || 'does not compile',
        line: outcome.error?.line,
        column: outcome.error?.column,
      },
    ])
  }

  /** Says exactly what is missing: bwrap, dash, an interpreter, or user namespaces; then runs a probe. */
  async checkAvailability(): Promise<Availability> {
    const checkedAt = new Date().toISOString()
    const missing = [
      ['bubblewrap (Debian package bubblewrap)', this.plan.bwrapPath],
      ['dash (Debian package dash)', this.plan.shellPath],
      ['python3', this.plan.interpreters.python],
      ['node', this.plan.interpreters.javascript],
      ['bash', this.plan.interpreters.bash],
    ].filter(([, file]) => !isExecutable(file))
    if (missing.length > 0) {
      return {
        status: 'unavailable',
        reason: `not installed: ${missing.map(([what, file]) => `${what} at ${file}`).join(', ')}`,
        checkedAt,
      }
    }
    const started = performance.now()
    const probe = await this.execute({ language: 'bash', code: 'echo ready' }, probeContext())
    await this.learningVersions
    if (probe.status !== 'ok' || !probe.stdout.includes('ready')) {
      const detail = `${probe.message ?? probe.status} ${probe.stderr}`.trim()
      const hint = /namespace|Operation not permitted|setting up uid map/i.test(detail)
        ? ' (user namespaces are disabled or restricted for this user: sysctl kernel.unprivileged_userns_clone=1)'
        : ''
      return { status: 'unavailable', reason: `the sandbox does not start: ${detail}${hint}`, checkedAt }
    }
    const latencyMs = performance.now() - started
    if (!this.uids) {
      return {
        status: 'degraded',
        reason: 'execgate is not running as root, so sandboxes share its uid and the process cap (RLIMIT_NPROC) cannot be enforced per run',
        latencyMs,
        checkedAt,
      }
    }
    return { status: 'available', latencyMs, checkedAt }
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

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK)
    return true
  } catch {
    return false
  }
}

function probeContext(): ExecutionContext {
  const policy: SecurityPolicy = {
    wallTimeMs: 5000,
    cpuTimeMs: 5000,
    memoryMb: 64,
    outputBytes: 1024,
    network: 'none',
    filesystem: 'none',
    allowedImports: [],
    hostCalls: { maxCount: 0, maxTotalMs: 0 },
    maxProcesses: 4,
    maxOutputs: 0,
    outputsBytes: 0,
    required: [],
  }
  return { traceId: 'process-availability', policy, signal: new AbortController().signal, deadline: performance.now() + policy.wallTimeMs }
}

export function createProcessAdapter(options?: ProcessAdapterOptions): ProcessAdapter {
  return new ProcessAdapter(options)
}

/** The uid pool as the warm interpreter uses it: its runs and its spare hold uids of their own. */
function warmUids(pool: UidPool): WarmUids {
  return {
    tryAcquire: () => pool.tryAcquire(),
    acquire: (signal) => pool.acquire(signal),
    release: (uid) => pool.release(uid),
    sweep: (uid) => sweep(uid),
  }
}
