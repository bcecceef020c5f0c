import { performance } from 'node:perf_hooks'
import {
  ExecgateError,
  OutputCapture,
  createResult,
  describeError,
  enforcementTable,
  OutputCollector,
  valueBytes,
  type AdapterCapabilities,
  type Availability,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type Language,
  type RunNeeds,
  type ValidationReport,
} from '../../src/core'
import { WorkerPool, internalContext, resultFromJob, runWorkerJob, type JobMessage, scanPython } from '../../src/runtime'
import { isMontyException, loadMontyBinding } from './binding'
import { usesDisplay } from './display'
import { mapMontyError } from './map-error'
import { montyGap } from './python-gaps'
import type { ToWorker } from './protocol'
import { withOptionDefaults } from '../shared/option-schema'
import { MONTY_OPTIONS_SCHEMA, type MontyAdapterOptions } from './options'
import { MontyReplSessions } from './repl-sessions'
import { toJsonValue } from './to-json'
import { packageVersions } from '../shared/engine-versions'

export const NAME = 'monty'

export type { MontyAdapterOptions, MontyOptions } from './options'

const LANGUAGES: readonly Language[] = ['python']

/**
 * Python through @pydantic/monty, a Python-subset interpreter in Rust (tier 1), on a small pool of worker processes
 * (short runs stay on the calling thread within a small time and memory budget).
 * Every run gets the policy's memory and time limits and a recursion limit — without `maxMemory` an allocation
 * failure would abort the whole Node process — and a print callback, without which `print` would write to the
 * host's own stdout. Monty has no filesystem, network, subprocess or `__import__`; sandboxed code reaches the host
 * only through the run's host functions.
 */
export class MontyAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  readonly capabilities: AdapterCapabilities = {
    engines: packageVersions(['@pydantic/monty']),
    languages: LANGUAGES,
    tier: 1,
    isolation: 'own interpreter (monty, Rust) in a worker process (short runs inline, 8 MiB), no OS access',
    enforcement: enforcementTable({
      wallTime: 'hard',
      memory: 'hard',
      output: 'hard',
      network: 'hard',
      filesystem: 'hard',
      imports: 'hard',
      processes: 'hard',
      hostCalls: 'hard',
      cpuTime: 'soft',
    }),
    // Through MontyRepl in a child process (its print has no callback); without host functions (see canRun).
    sessions: true,
    hostFunctions: true,
    workspace: true,
    streaming: true,
    // Only through the `http_request` host function, which the egress gateway answers under the policy's rules.
    network: true,
    cancellable: true,
    // Not CPython: a correct program can fail here (see docs/adapters/monty.md, "Answers like CPython").
    languageSubset: true,
  }
  private readonly maxRecursionDepth: number
  private readonly killGraceMs: number
  private readonly inlineBudgetMs: number
  private readonly inlineMemoryBytes: number
  private readonly recycleAboveBytes: number
  private readonly pool: WorkerPool<JobMessage, ToWorker>
  private readonly replSessions: MontyReplSessions
  private nextJobId = 0

  constructor(options: MontyAdapterOptions = {}) {
    const settings = withOptionDefaults(MONTY_OPTIONS_SCHEMA, options)
    this.maxRecursionDepth = settings.maxRecursionDepth
    if (!Number.isInteger(this.maxRecursionDepth) || this.maxRecursionDepth < 10) {
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
        detail: `adapters.monty.maxRecursionDepth must be an integer of 10 or more: value was ${options.maxRecursionDepth}`,
      })
    }
    this.killGraceMs = settings.killGraceMs
    this.inlineBudgetMs = settings.inlineBudgetMs
    this.pool = new WorkerPool<JobMessage, ToWorker>(__dirname, 'worker', 'monty', settings.workers, options.warmOnStart ?? true, {
      kind: 'process',
      maxRssBytes: settings.maxWorkerMiB * 2 ** 20,
    })
    this.inlineMemoryBytes = settings.inlineMemoryMiB * 2 ** 20
    this.recycleAboveBytes = settings.recycleAboveMiB * 2 ** 20
    // One run per worker process (a run inline on the calling thread moves to one when it outgrows its budget).
    this.capabilities = { ...this.capabilities, concurrency: settings.workers }
    this.replSessions = new MontyReplSessions(options.sessions, this.maxRecursionDepth, this.killGraceMs)
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    return this.executeNow(request, context)
  }

  /**
   * `execute`, with the inline run's result given on the spot (no promise): the service then answers it without a
   * turn of the event loop. Everything else (sessions, host functions, display(), a run that outgrows the inline
   * budget) is a promise of the worker's answer.
   */
  executeNow(request: ExecutionRequest, context: ExecutionContext): ExecutionResult | Promise<ExecutionResult> {
    const started = performance.now()
    if (request.language !== 'python') {
      return createResult('invalid_request', NAME, { message: `[execgate] [monty] monty runs python, not ${request.language}` })
    }
    if (request.sessionId) {
      if (context.hostFunctions?.list().length)
        return createResult('invalid_request', NAME, { message: `[execgate] [monty] ${SESSIONS_WITHOUT_HOST_FUNCTIONS}` })
      return this.replSessions.run(request.sessionId, request.code, context)
    }
    // display() is answered by the worker (display.ts): code that calls it skips the inline path.
    const display = usesDisplay(request.code)
    if (!context.hostFunctions?.list().length && !display && this.inlineBudgetMs > 0) {
      const inline = this.runInline(request.code, context, started)
      if (inline) return inline
    }
    return this.runOnWorker(request, context, display, started)
  }

  /** The run on a worker process: its full time and memory, cancellable, with host functions and display(). */
  private async runOnWorker(
    request: ExecutionRequest,
    context: ExecutionContext,
    display: boolean,
    started: number,
  ): Promise<ExecutionResult> {
    const output = new OutputCapture(context.policy.outputBytes, context.onOutput)
    const outputs = new OutputCollector(context.policy, context.onRichOutput)
    const remainingSecs = Math.max(0.001, (context.deadline - performance.now()) / 1000)
    const outcome = await runWorkerJob(
      this.pool,
      {
        type: 'run',
        id: ++this.nextJobId,
        code: request.code,
        limits: {
          maxDurationSecs: remainingSecs,
          maxMemory: context.policy.memoryMb * 1024 * 1024,
          maxRecursionDepth: this.maxRecursionDepth,
        },
        outputBytes: context.policy.outputBytes,
        hostFunctions: (context.hostFunctions?.list() ?? []).map((spec) => spec.name),
        ...(display
          ? {
              display: {
                maxOutputs: context.policy.maxOutputs,
                outputsBytes: context.policy.outputsBytes,
                tableBytes: context.policy.outputBytes,
              },
            }
          : {}),
        recycleAboveBytes: this.recycleAboveBytes,
      },
      context,
      output,
      { label: NAME, killGraceMs: this.killGraceMs, outputs },
    )
    // display() items, sent while the code ran; items the worker left out for the limits make an ok run output_limit.
    return outputs.applyTo(resultFromJob(NAME, outcome, output, started), NAME, outcome.outputsOmitted)
  }

  /**
   * The fast path: monty on the calling thread with a time limit of `inlineBudgetMs`, for the microsecond runs that
   * are most of the traffic. A run that needs longer (or whose binding cannot load) returns undefined and is run
   * again on a worker, where it can take its full time without holding the event loop and can be cancelled.
   */
  private runInline(code: string, context: ExecutionContext, started: number): ExecutionResult | undefined {
    if (context.isAborted?.() ?? context.signal.aborted)
      return createResult('cancelled', NAME, { message: '[execgate] [monty] the run was cancelled before it started' })
    let binding
    try {
      binding = loadMontyBinding()
    } catch {
      return undefined
    }
    const remainingMs = context.deadline - performance.now()
    const budgetMs = Math.min(this.inlineBudgetMs, remainingMs)
    const memoryBytes = context.policy.memoryMb * 2 ** 20
    const output = new OutputCapture(context.policy.outputBytes)
    // No options: monty's default script name is the workers' 'main.py' (test/adapters/monty.test.ts reads it in a
    // traceback), and passing it costs the native call ~0.7 µs a run, a sixth of a trivial run (measured).
    const created = binding.Monty.create(code)
    let outcome: unknown
    if (isMontyException(created)) {
      outcome = created
    } else {
      outcome = created.run({
        limits: {
          maxDurationSecs: Math.max(0.001, budgetMs / 1000),
          maxMemory: Math.min(memoryBytes, this.inlineMemoryBytes),
          maxRecursionDepth: this.maxRecursionDepth,
        },
        printCallback: (stream, text) => {
          if (!output.write(stream === 'stderr' ? 'stderr' : 'stdout', text)) throw OUTPUT_CAP
        },
      })
    }
    let status: ExecutionResult['status'] = 'ok'
    let value: unknown
    let error: ExecutionResult['error']
    if (isMontyException(outcome)) {
      if (output.exceeded) {
        status = 'output_limit'
        error = { type: 'OutputLimit', message: 'output passed the limit; the run was stopped' }
      } else {
        ;({ status, error } = mapMontyError(outcome))
        if (status === 'timeout' && budgetMs < remainingMs - 1) return undefined // needs more time: a worker takes it
        // needs more memory: a worker process takes it
        if (status === 'memory_limit' && this.inlineMemoryBytes < memoryBytes) return undefined
      }
    } else {
      value = toJsonValue(outcome)
    }
    const captured = output.finish(valueBytes(value))
    if (status === 'ok' && captured.truncated) status = 'output_limit'
    // The run is over before anyone could read a chunk: hand the output over whole.
    if (context.onOutput) {
      if (captured.stdout) context.onOutput('stdout', captured.stdout)
      if (captured.stderr) context.onOutput('stderr', captured.stderr)
    }
    // Fields named one by one, not `{ ...captured, value, … }`: on Node 20 a literal that starts with a spread and adds
    // properties after it costs ~0.5 µs a property (3.8 µs here, measured: as much as the run of `1 + 1` itself).
    return createResult(status, NAME, {
      stdout: captured.stdout,
      stderr: captured.stderr,
      truncated: captured.truncated,
      stdoutBytes: captured.stdoutBytes,
      stderrBytes: captured.stderrBytes,
      value,
      error,
      usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes },
    })
  }

  /** Parses with monty itself (in a worker), reporting syntax errors and constructs monty does not support. */
  async validate(code: string, language: Language): Promise<ValidationReport> {
    const report = (issues: ValidationReport['issues']): ValidationReport => ({
      valid: !issues.some((issue) => issue.severity === 'error'),
      language,
      validator: NAME,
      issues,
      implemented: true,
    })
    if (language !== 'python') return report([{ severity: 'error', code: 'unsupported', message: `monty runs python, not ${language}` }])
    const parsed = await runWorkerJob(
      this.pool,
      { type: 'parse', id: ++this.nextJobId, code },
      internalContext('monty-internal', 10_000, 16),
      new OutputCapture(1024),
      { label: NAME, killGraceMs: 1000 },
    )
    if (parsed.status === 'ok') return report([])
    const error = parsed.error ?? { type: 'Error', message: parsed.message ?? parsed.status }
    return report([
      {
        severity: 'error',
        code: error.type === 'NotSupported' ? 'unsupported' : 'syntax',
        message: error.message,
        line: error.line,
        column: error.column,
      },
    ])
  }

  /** Whether monty can run this code, decided by scanning it before running (routing escalates when not). */
  canRun(code: string, _language?: Language, needs?: RunNeeds): { ok: boolean; reason?: string } {
    if (needs?.session && needs.hostFunctions) return { ok: false, reason: SESSIONS_WITHOUT_HOST_FUNCTIONS }
    const scan = scanPython(code)
    if (scan.unsupported.length > 0) return { ok: false, reason: `monty does not support ${scan.unsupported.join(', ')}` }
    const missing = scan.imports.filter((module) => !MONTY_MODULES.has(module.name.split('.')[0]!))
    if (missing.length > 0) return { ok: false, reason: `monty has no module ${missing.map((module) => module.name).join(', ')}` }
    const gap = montyGap(scan)
    if (gap) return { ok: false, reason: gap }
    return { ok: true }
  }

  supportedLanguages(): readonly Language[] {
    return LANGUAGES
  }

  async checkAvailability(): Promise<Availability> {
    const started = performance.now()
    const checkedAt = new Date().toISOString()
    const probe = await this.execute({ language: 'python', code: '1 + 1' }, internalContext('monty-internal', 10_000, 16))
    if (probe.status === 'ok' && probe.value === 2) return { status: 'available', latencyMs: performance.now() - started, checkedAt }
    return {
      status: 'unavailable',
      reason: `monty probe answered ${probe.status}: ${describeError(probe.message ?? probe.error?.message)}`,
      checkedAt,
    }
  }

  async closeSession(sessionId: string): Promise<boolean> {
    return this.replSessions.close(sessionId)
  }

  /** The REPL's state is bytes, so a session can move to another node (docs/sandboxes.md#sessions-across-nodes). */
  async exportSession(sessionId: string): Promise<Uint8Array | undefined> {
    return this.replSessions.exportState(sessionId)
  }

  async importSession(sessionId: string, state: Uint8Array): Promise<void> {
    this.replSessions.importState(sessionId, state)
  }

  /**
   * Loads monty's native binding on this thread (the inline fast path's first run would otherwise pay it) and
   * waits for one worker to be ready for the runs that go there.
   */
  async warmUp(): Promise<void> {
    loadMontyBinding()
    await this.pool.warmUp()
  }

  isWarm(): boolean {
    return this.pool.hasIdle
  }

  async dispose(): Promise<void> {
    await Promise.all([this.replSessions.dispose(), this.pool.dispose()])
  }
}

/** Thrown from the print callback to stop an inline run whose output passed the cap. */
const OUTPUT_CAP = new Error('execgate: output limit reached')

const SESSIONS_WITHOUT_HOST_FUNCTIONS =
  "monty's sessions run in its REPL, which cannot call host functions (pyodide keeps sessions with them)"

/** Modules monty provides (its own implementations; anything else is escalated to a full Python). */
export const MONTY_MODULES = new Set(['math', 'json', 're', 'datetime', 'sys', 'typing', 'asyncio', 'os', 'dataclasses', 'pathlib'])

export function createMontyAdapter(options?: MontyAdapterOptions): MontyAdapter {
  return new MontyAdapter(options)
}
