import { performance } from 'node:perf_hooks'
import {
  ExecgateError,
  OutputCapture,
  createResult,
  enforcementTable,
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
  type WorkspaceFile,
  inlineFiles,
} from '../../src/core'
import { internalContext } from '../../src/runtime'
import { CalibratedShellCost, inputBytesOf, scanShellScript } from '../shared/shell-script'
import { ShellProcessPool, runShellJob } from './child-pool'
import { knownCommands, shellUtilities } from './commands'
import { withOptionDefaults } from '../shared/option-schema'
import { SHELL_OPTIONS_SCHEMA, type ShellOptionsConfig } from './options'
import type { ShellJob, ShellWorkspaceChanges } from './protocol'
import { ShellSandbox } from './sandbox'
import { locateJustBash } from '../shared/just-bash'

export const NAME = 'shell'

/** Every option falls back to the config schema's default. */
export type ShellAdapterOptions = Partial<ShellOptionsConfig>

const LANGUAGES: readonly Language[] = ['bash']

/**
 * Below this a shell process cannot load just-bash and run; a smaller memory cap is raised to it (a warm process
 * holds about 20 MiB of heap). See docs/adapters/shell.md.
 */
export const MIN_HEAP_MB = 32
/** The default policy's memory cap, whose pool `warmUp()` starts. */
const WARM_UP_MEMORY_MB = 128

/** The default policy's memory: the pool most runs use, which the first availability probe warms. */
const PROBE_MEMORY_MB = 128

/** `{ 'just-bash': version }` for receipts, bundled or installed alike; none when it cannot be found (unavailable). */
function justBashEngine(): Readonly<Record<string, string>> {
  try {
    const { version } = locateJustBash()
    const engines: Record<string, string> = version ? { 'just-bash': version } : {}
    return Object.freeze(engines)
  } catch {
    return Object.freeze({})
  }
}

type ShellPool = ShellProcessPool

/**
 * bash on just-bash (a bash interpreter with ~90 coreutils in TypeScript), tier 1: the script's commands never
 * become processes, and its filesystem is an in-memory tree holding the run's workspace under /workspace, so the
 * host's files are unreachable. It runs in a small pool of warm Node processes (child.js) per memory cap, each
 * with the policy's memory as its V8 heap cap, an empty environment and Node's permission model; a script past
 * its deadline or its cap costs one process, which is replaced. (Worker threads were tried first: a heap-limit
 * abort in a worker took the host process down.) just-bash's network, Python, JavaScript and SQLite commands are
 * never registered.
 */
export class ShellAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  readonly capabilities: AdapterCapabilities = {
    engines: justBashEngine(),
    languages: LANGUAGES,
    tier: 1,
    isolation: 'just-bash interpreter in a permission-restricted Node process: in-memory filesystem, no network, V8 heap cap',
    enforcement: enforcementTable({
      wallTime: 'hard',
      memory: 'hard',
      output: 'hard',
      // No network command is registered and no socket API is reachable from a shell script.
      network: 'hard',
      filesystem: 'hard',
      // A shell imports nothing; the interpreters that could (python3, js-exec) are not registered.
      imports: 'hard',
      // Pipelines and `&` run inside the interpreter: no command becomes a process.
      processes: 'hard',
      hostCalls: 'hard',
      // Bounded by wall time on one thread; not measured separately.
      cpuTime: 'soft',
    }),
    sessions: false,
    hostFunctions: false,
    workspace: true,
    // just-bash hands back a script's output when it ends.
    streaming: false,
    network: false,
    cancellable: true,
    sandboxes: true,
  }
  private readonly options: ShellOptionsConfig
  /** What a script costs here: `startupMs` learned from this adapter's runs, `nsPerByteStage` as configured. */
  private readonly cost: CalibratedShellCost
  /** One pool per memory cap, most recently used last. */
  private readonly pools = new Map<number, ShellPool>()
  /** Pools that have answered ready once: a first call to a new memory cap waits for its processes off the clock. */
  private readonly warmPools = new WeakSet<ShellPool>()
  private nextJobId = 0
  private disposed = false

  constructor(options: ShellAdapterOptions = {}) {
    this.options = withOptionDefaults(SHELL_OPTIONS_SCHEMA, options)
    this.cost = new CalibratedShellCost(this.options)
    for (const key of ['processes', 'maxPools', 'maxCallDepth', 'maxIterations'] as const) {
      const value = this.options[key]
      if (!Number.isInteger(value) || value < 1)
        throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
          detail: `adapters.shell.${key} must be a positive integer: value was ${value}`,
        })
    }
  }

  /** The pool whose processes' heap cap is `memoryMb`, started on first use; past `maxPools` the oldest closes. */
  private pool(memoryMb: number): ShellPool {
    const heapMb = Math.max(MIN_HEAP_MB, memoryMb)
    let pool = this.pools.get(heapMb)
    if (pool) {
      this.pools.delete(heapMb)
    } else {
      pool = new ShellProcessPool(heapMb, this.options.processes)
      while (this.pools.size >= this.options.maxPools) {
        const [oldest, retired] = this.pools.entries().next().value as [number, ShellPool]
        this.pools.delete(oldest)
        void retired.dispose()
      }
    }
    this.pools.set(heapMb, pool)
    return pool
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    if (!LANGUAGES.includes(request.language)) {
      return createResult('invalid_request', NAME, { message: `[execgate] [shell] the shell runs bash, not ${request.language}` })
    }
    if (request.sessionId) {
      return createResult('invalid_request', NAME, {
        message: '[execgate] [shell] the shell keeps no sessions: each script starts from the workspace alone',
      })
    }
    return (await this.runScript(request, context, [...(context.files ?? inlineFiles(request.files) ?? [])])).result
  }

  /**
   * Runs a bash script on a pooled process over `files`. With `sandbox`, the answer also says how the script left the
   * workspace (a persistent sandbox keeps its own copy of it, see adapters/shell/sandbox.ts).
   */
  async runScript(
    request: ExecutionRequest,
    context: ExecutionContext,
    files: WorkspaceFile[],
    sandbox?: { maxWorkspaceBytes: number },
  ): Promise<{ result: ExecutionResult; workspace?: ShellWorkspaceChanges }> {
    const started = performance.now()
    if (this.disposed) return { result: createResult('unavailable', NAME, { message: '[execgate] [shell] the adapter was disposed' }) }
    const output = new OutputCapture(context.policy.outputBytes, context.onOutput)
    const job: ShellJob = {
      type: 'run',
      id: ++this.nextJobId,
      script: request.code,
      ...(request.stdin !== undefined ? { stdin: request.stdin } : {}),
      files,
      ...(sandbox ? { keepWorkspace: true, maxWorkspaceBytes: sandbox.maxWorkspaceBytes } : {}),
      filesystem: context.policy.filesystem,
      remainingMs: Math.max(0, context.deadline - performance.now()),
      timeoutMs: context.policy.wallTimeMs,
      outputBytes: context.policy.outputBytes,
      memoryBytes: Math.max(MIN_HEAP_MB, context.policy.memoryMb) * 1024 * 1024,
      maxCallDepth: this.options.maxCallDepth,
      maxIterations: this.options.maxIterations,
      commands: shellUtilities(),
    }
    const pool = this.pool(context.policy.memoryMb)
    const runContext = this.warmPools.has(pool) ? context : await this.waitForPool(pool, context)
    const outcome = await runShellJob(pool, job, runContext, this.options.killGraceMs)
    if (outcome.stdout) output.write('stdout', outcome.stdout)
    if (outcome.stderr) output.write('stderr', outcome.stderr)
    const captured = output.finish(0)
    const status = outcome.status === 'ok' && captured.truncated ? 'output_limit' : outcome.status
    if (status === 'ok' && !sandbox) this.cost.observe(scanShellScript(request.code), inputBytesOf(job.files), performance.now() - started)
    const result = createResult(status, NAME, {
      ...captured,
      error: outcome.error,
      ...(outcome.files ? { files: outcome.files } : {}),
      usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes },
    })
    return { result, ...(outcome.workspace ? { workspace: outcome.workspace } : {}) }
  }

  /** A workspace kept in this process between execs, each a script on the pool (adapters/shell/sandbox.ts). */
  async openSandbox(options: SandboxOpenOptions): Promise<ShellSandbox> {
    if (this.disposed) throw new ExecgateError('EXECGATE_ADAPTER_UNAVAILABLE', { name: NAME, detail: 'the adapter was disposed' })
    return new ShellSandbox(options.id, options.limits, (request, context, files, maxWorkspaceBytes) =>
      this.runScript(request, context, files, { maxWorkspaceBytes }),
    )
  }

  /**
   * Starts the pool for the default policy's memory cap (128 MiB), so the first script at start-up pays no process
   * start; a run with another cap starts its own pool on first use.
   */
  async warmUp(): Promise<void> {
    const pool = this.pool(WARM_UP_MEMORY_MB)
    try {
      pool.release(await pool.acquire())
      this.warmPools.add(pool)
    } catch {
      // A pool that cannot start answers its first run as unavailable; warm-up never rejects.
    }
  }

  isWarm(): boolean {
    const pool = this.pools.get(Math.max(MIN_HEAP_MB, WARM_UP_MEMORY_MB))
    return pool !== undefined && this.warmPools.has(pool)
  }

  /** Waits for a new pool's first process with the run's clock paused (starting one is not the script's time). */
  private async waitForPool(pool: ShellPool, context: ExecutionContext): Promise<ExecutionContext> {
    const waited = performance.now()
    context.pauseClock?.()
    try {
      pool.release(await pool.acquire())
      this.warmPools.add(pool)
    } catch {
      // A pool that cannot start answers through runWorkerJob as unavailable.
    }
    const deadline = context.restartClock?.() ?? context.deadline + (performance.now() - waited)
    return { ...context, deadline }
  }

  /**
   * Yes when every command the script names is one the shell has (a builtin, a function it defines, or a just-bash
   * utility) and just-bash parses it; a script needing a real program (`python3`, `gcc`, `curl`), a command named
   * only at run time, or a sourced file goes on to a tier with real programs.
   */
  canRun(code: string, language?: Language, needs?: RunNeeds): { ok: boolean; reason?: string } {
    if (language !== undefined && !LANGUAGES.includes(language)) return { ok: false, reason: `the shell runs bash, not ${language}` }
    if (needs?.session) return { ok: false, reason: 'the shell keeps no sessions' }
    const scan = scanShellScript(code)
    if (scan.syntaxError) return { ok: false, reason: `just-bash cannot parse the script: ${scan.syntaxError}` }
    if (scan.dynamic) return { ok: false, reason: `the shell cannot tell which programs the script needs: ${scan.dynamic}` }
    const known = knownCommands()
    const missing = scan.commands.filter((command) => !known.has(command) && !scan.functions.includes(command))
    if (missing.length > 0) return { ok: false, reason: `the shell has no ${missing.map((command) => `\`${command}\``).join(', ')}` }
    return { ok: true }
  }

  /** Startup plus a per-byte cost for each command that reads the input; see docs/adapters/shell.md. */
  estimateMs(code: string, _language?: Language, needs?: RunNeeds): number {
    return this.cost.estimate(scanShellScript(code), needs?.inputBytes ?? 0)
  }

  async validate(code: string, language: Language): Promise<ValidationReport> {
    const scan = scanShellScript(code)
    const issues = scan.syntaxError ? [{ code: 'syntax', severity: 'error' as const, message: scan.syntaxError }] : []
    return { valid: issues.length === 0, language, validator: NAME, issues, implemented: true }
  }

  supportedLanguages(): readonly Language[] {
    return LANGUAGES
  }

  async checkAvailability(): Promise<Availability> {
    const checkedAt = new Date().toISOString()
    const started = performance.now()
    // On the pool the last run used (else the default policy's 128 MiB), so a probe does not start a pool of its own.
    const memoryMb = [...this.pools.keys()].pop() ?? PROBE_MEMORY_MB
    const probe = await this.execute({ language: 'bash', code: 'echo $((1 + 1))' }, internalContext('shell-availability', 10_000, memoryMb))
    if (probe.status === 'ok' && probe.stdout.trim() === '2')
      return { status: 'available', latencyMs: performance.now() - started, checkedAt }
    return {
      status: 'unavailable',
      reason: `shell probe answered ${probe.status}: ${probe.message ?? probe.error?.message ?? ''}`,
      checkedAt,
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true
    const pools = [...this.pools.values()]
    this.pools.clear()
    await Promise.all(pools.map((pool) => pool.dispose()))
  }
}

export function createShellAdapter(options?: ShellAdapterOptions): ShellAdapter {
  return new ShellAdapter(options)
}
