import { performance } from 'node:perf_hooks'
import {
  ExecgateError,
  OutputCapture,
  OutputCollector,
  createResult,
  describeError,
  errorResult,
  enforcementTable,
  valueBytes,
  type AdapterCapabilities,
  type Availability,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type Language,
  type ValidationReport,
} from '../../src/core'
import { SessionStore, RunController, PoolWaitTimeout, internalContext } from '../../src/runtime'
import { withOptionDefaults } from '../shared/option-schema'
import { PYODIDE_OPTIONS_SCHEMA, type PyodideAdapterOptions } from './options'
import type { NetworkWrapper } from './network-namespace'
import { PyodideProcessPool, type PyodideProcess } from './process-pool'
import { runOnProcess } from './run-on'
import { packageVersions } from '../shared/engine-versions'

export const NAME = 'pyodide'

export type { PyodideAdapterOptions, PyodideOptions } from './options'

const LANGUAGES: readonly Language[] = ['python']

/** A run that gave up waiting for pyodide's warm-up: a cold CPython load takes a few seconds on a busy host. */
const WARMING_RETRY_AFTER_MS = 3000

/**
 * Longest a run waits for the process that answered the run before it to finish putting its memory back (~0.1 ms;
 * 3–4 ms where the whole memory is compared) rather than take another idle one: see `execute`.
 */
const HOT_PROCESS_WAIT_MS = 1

/**
 * Full CPython (3.14, standard library) in WebAssembly, tier 3. Each interpreter lives in its own child process
 * under Node's permission model with an empty environment, because pyodide's JS bridge is not a boundary (see
 * docs/architecture.md, defense in depth): code that reaches JavaScript finds a process that can read only pyodide's
 * files, start nothing, and holds nothing. Every run gets fresh globals in an interpreter whose memory was put back
 * after the run before; a run that reached JavaScript gets its process replaced (child-guard.js). Time, memory and
 * output are enforced from outside: the process is killed.
 */
export class PyodideAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  // Not readonly: network becomes 'hard' once the pool's first start has probed bubblewrap (onProbed).
  capabilities: AdapterCapabilities = {
    engines: packageVersions(['pyodide']),
    languages: LANGUAGES,
    tier: 3,
    isolation: 'wasm in a child process under the Node permission model (read-only pyodide files, no processes, empty env)',
    enforcement: enforcementTable({
      wallTime: 'hard',
      output: 'hard',
      filesystem: 'hard',
      processes: 'hard',
      // Measured from outside every few milliseconds, then killed: best effort between two measurements.
      memory: 'soft',
      // Without bubblewrap: fetch and sockets are removed from the process (a first layer), but Node 20's permission
      // model does not cover the network. With it (probed at the pool's first start), each process has a network
      // namespace of its own and this becomes 'hard' (onProbed).
      network: 'soft',
      // The policy's import check runs before the adapter; nothing inside the interpreter refuses an import.
      imports: 'soft',
      cpuTime: 'soft',
    }),
    // Globals that pickle carry over between calls; each call still gets fresh globals in an interpreter put back.
    sessions: true,
    // Synchronous for the code, as on monty: the child blocks on a pipe until the adapter answers.
    hostFunctions: true,
    // urllib and pyodide.http call it for the code (child.js), when the run's policy allows network.
    implicitHostFunctions: ['http_request'],
    workspace: true,
    streaming: true,
    // pyodide.http (pyfetch, open_url) and urllib go through the run's http_request host function (child.js).
    network: true,
    cancellable: true,
  }
  private readonly pool: PyodideProcessPool
  private readonly memoryPollMs: number
  private nextId = 0
  private readonly sessions: SessionStore<string>
  /** The post-run restore of the run that answered last, while it goes on (run-on.ts). */
  private lastCheck: Promise<void> | undefined

  constructor(options: PyodideAdapterOptions = {}) {
    const settings = withOptionDefaults(PYODIDE_OPTIONS_SCHEMA, options)
    const poolSize = settings.poolSize
    if (!Number.isInteger(poolSize) || poolSize < 1) {
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
        detail: `adapters.pyodide.poolSize must be a positive integer: value was ${options.poolSize}`,
      })
    }
    this.memoryPollMs = settings.memoryPollMs
    // Started by warmUp() (execgate's ready() warms pyodide behind the first tier) or by the first run, never here:
    // a pool loading CPython at construction would take the cores the first tier warms on.
    this.pool = new PyodideProcessPool(poolSize, false, settings.bwrapPath, (wrapper) => this.onProbed(wrapper))
    // One run per pool process: admission counts them as this adapter's slots.
    this.capabilities = { ...this.capabilities, concurrency: poolSize }
    this.sessions = new SessionStore(NAME, options.sessions)
  }

  /**
   * The pool's first start probed bubblewrap. Only then, and only if it works, does the adapter claim `network: 'hard'`:
   * before it (an adapter never started, `execgate policy` on a cold process) the claim is the first layer's 'soft',
   * which is true of every run, namespaced or not.
   */
  private onProbed(wrapper: NetworkWrapper | undefined): void {
    if (!wrapper) return
    // Each process is in a network namespace with only its own loopback: the gateway's host function is the way out.
    this.capabilities = {
      ...this.capabilities,
      isolation: `${this.capabilities.isolation}, in a network namespace of its own (bubblewrap)`,
      enforcement: { ...this.capabilities.enforcement, network: 'hard' },
    }
  }

  /** Resolves once one interpreter of the pool is loaded, so the next run pays no cold start. */
  warmUp(): Promise<void> {
    return this.pool.warmOne()
  }

  isWarm(): boolean {
    return this.pool.hasIdle
  }

  /** Resolves once the pool has finished warming. */
  warm(): Promise<void> {
    return this.pool.settled()
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    const started = performance.now()
    if (request.language !== 'python') {
      return createResult('invalid_request', NAME, { message: `[execgate] [pyodide] pyodide runs python, not ${request.language}` })
    }
    let session: { state: string } | undefined
    if (request.sessionId) {
      const opened = this.sessions.openForCall(request.sessionId)
      if ('refusal' in opened) return opened.refusal
      session = { state: opened.state ?? '' }
    }
    let pyodideProcess: PyodideProcess
    // Waiting for a warm interpreter counts in the duration, not in the code's time limit. A run that meets pyodide
    // warming behind the first tier (started with execgate) waits at most its own time limit, then answers `timeout`
    // saying it never started: a server's caller is not held for a load it did not ask for. A run that starts the
    // pool itself (the CLI's one-shot, `warmOnStart: false`) pays that load unbounded, as a process run pays its
    // spawn: bounding it would time out every such run on a host slower than its limit, and a retry starts cold
    // again. A wait for a replacement (a run killed one) is not bounded: it is already loading. A cancel ends any wait.
    const run = new RunController(context)
    const boundMs = this.pool.hasStarted && this.pool.warming ? Math.max(0, context.deadline - performance.now()) : Number.POSITIVE_INFINITY
    run.pauseClock()
    // Back to back, the process that answered last is the one to take once its check is in: it is awake and its
    // caches are warm, where the pool's other process sleeps and has to be woken for the run message, and again for
    // its answer's reader (p50 0.90 against 1.28 ms for `1 + 1`, docs/benchmarks.md). The pool hands out the
    // process released last; the wait is bounded, and only taken when another process is idle.
    if (this.lastCheck && this.pool.hasIdle) await settledWithin(this.lastCheck, HOT_PROCESS_WAIT_MS)
    try {
      pyodideProcess = await this.pool.acquire(boundMs, context.signal)
    } catch (error) {
      run.restartClock()
      run.settle()
      return this.waitRefusal(error, boundMs, context.signal)
    }
    run.restartClock()
    if (context.signal.aborted) {
      run.settle()
      this.pool.release(pyodideProcess) // untouched: the run never started
      return createResult('cancelled', NAME, { message: '[execgate] [pyodide] the run was cancelled before it started' })
    }
    const output = new OutputCapture(context.policy.outputBytes, context.onOutput)
    // display() items, each sent by the child when the code makes it and checked here (docs/data.md#rich-outputs).
    const outputs = new OutputCollector(context.policy, context.onRichOutput)
    const outcome = await runOnProcess(this.pool, pyodideProcess, {
      id: ++this.nextId,
      code: request.code,
      session,
      context,
      run,
      output,
      outputs,
      memoryPollMs: this.memoryPollMs,
      onChecking: (checked) => {
        this.lastCheck = checked
        void checked.then(() => {
          if (this.lastCheck === checked) this.lastCheck = undefined
        })
      },
    })
    if (request.sessionId && session) {
      const captured = outcome.status === 'ok' ? outcome.session : undefined
      const message = this.sessions.keepAfterCall(
        request.sessionId,
        session.state,
        captured === undefined ? undefined : { bytes: captured.length, state: () => captured },
      )
      if (message) outcome.message = message
    }
    const captured = output.finish(valueBytes(outcome.value))
    outputs.omitByRunner(outcome.outputsOmitted)
    const rich = outputs.fields(outcome.status, NAME)
    const status = rich.status === 'ok' && captured.truncated ? 'output_limit' : rich.status
    return createResult(status, NAME, {
      ...captured,
      value: outcome.value,
      error: outcome.error,
      ...(rich.outputs ? { outputs: rich.outputs } : {}),
      ...(outcome.message || rich.message ? { message: outcome.message ?? rich.message } : {}),
      usage: {
        wallMs: performance.now() - started,
        outputBytes: output.totalBytes,
        ...(outcome.memoryBytes ? { memoryBytes: outcome.memoryBytes } : {}),
      },
    })
  }

  async closeSession(sessionId: string): Promise<boolean> {
    return this.sessions.close(sessionId)
  }

  /** Why a run that waited for an interpreter never got one, as a result: its limit passed, cancelled, or none can start. */
  private waitRefusal(error: unknown, boundMs: number, signal: AbortSignal): ExecutionResult {
    if (error instanceof PoolWaitTimeout) {
      const reason = 'pyodide is still starting (loading CPython in WebAssembly takes a few seconds after start-up)'
      const refusal = new ExecgateError('EXECGATE_INTERPRETER_WAIT', { reason, boundMs: Math.round(boundMs) })
      return errorResult('timeout', NAME, refusal, { retryAfterMs: WARMING_RETRY_AFTER_MS })
    }
    if (signal.aborted) return createResult('cancelled', NAME, { message: '[execgate] [pyodide] the run was cancelled before it started' })
    return createResult('unavailable', NAME, { message: `[execgate] [pyodide] ${describeError(error)}` })
  }

  /** CPython's own compiler (in a pool process) for syntax, with line and column; imports are the policy's. */
  async validate(code: string, language: Language): Promise<ValidationReport> {
    const report = (issues: ValidationReport['issues']): ValidationReport => ({
      valid: issues.length === 0,
      language,
      validator: NAME,
      issues,
      implemented: true,
    })
    if (language !== 'python') return report([{ severity: 'error', code: 'unsupported', message: `pyodide runs python, not ${language}` }])
    let pyodideProcess: PyodideProcess
    try {
      pyodideProcess = await this.pool.acquire()
    } catch (error) {
      return {
        ...report([{ severity: 'warning', code: 'validator_unavailable', message: `[execgate] [pyodide] ${describeError(error)}` }]),
        implemented: false,
      }
    }
    const id = ++this.nextId
    const problem = await new Promise<{ type: string; message: string; line?: number; column?: number } | undefined | 'died'>((resolve) => {
      pyodideProcess.attach(
        (message) => {
          if (message.type === 'parsed' && message.id === id) resolve(message.error)
        },
        () => resolve('died'),
      )
      pyodideProcess.child.send({ type: 'parse', id, code })
    })
    if (problem === 'died') {
      void this.pool.replace(pyodideProcess)
      return {
        ...report([
          { severity: 'warning', code: 'validator_unavailable', message: '[execgate] [pyodide] the interpreter exited while parsing' },
        ]),
        implemented: false,
      }
    }
    this.pool.release(pyodideProcess)
    return report(
      problem
        ? [
            {
              severity: 'error',
              code: 'syntax',
              message: `${problem.type}: ${problem.message}`,
              line: problem.line,
              column: problem.column,
            },
          ]
        : [],
    )
  }

  supportedLanguages(): readonly Language[] {
    return LANGUAGES
  }

  async checkAvailability(): Promise<Availability> {
    const checkedAt = new Date().toISOString()
    if (this.pool.broken) return { status: 'unavailable', reason: `pyodide cannot start here: ${this.pool.lastFailure}`, checkedAt }
    // Warming (behind the first tier at start-up, or not started yet): a probe would wait seconds for the warm-up and
    // hold /readyz with it. It stays routable: a run that needs it waits for it.
    if (this.pool.warming) return { status: 'available', reason: 'warming up: a run now waits for the interpreter to load', checkedAt }
    const started = performance.now()
    const probe = await this.execute({ language: 'python', code: '1 + 1' }, internalContext('pyodide-availability', 60_000, 256))
    if (probe.status === 'ok' && probe.value === 2) return { status: 'available', latencyMs: performance.now() - started, checkedAt }
    return { status: 'unavailable', reason: `pyodide probe answered ${probe.status}: ${probe.message ?? ''}`, checkedAt }
  }

  async dispose(): Promise<void> {
    await this.pool.dispose()
  }
}

/** Resolves when `done` does or `ms` have passed, whichever is first. */
function settledWithin(done: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const passed = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  return Promise.race([done, passed]).then(() => clearTimeout(timer))
}

export function createPyodideAdapter(options?: PyodideAdapterOptions): PyodideAdapter {
  return new PyodideAdapter(options)
}
