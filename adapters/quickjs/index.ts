import { performance } from 'node:perf_hooks'
import {
  ExecgateError,
  OutputCapture,
  OutputCollector,
  createResult,
  describeError,
  enforcementTable,
  type AdapterCapabilities,
  type Availability,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type Language,
  type ValidationReport,
} from '../../src/core'
import {
  WorkerPool,
  internalContext,
  resultFromJob,
  runWorkerJob,
  type JobMessage,
  SessionStore,
  parseJavaScript,
  parseTypeScript,
} from '../../src/runtime'
import { prepareSource, type PreparedSource } from './prepare-source'
import type { ToWorker } from './protocol'
import { withOptionDefaults } from '../shared/option-schema'
import { MAX_SAFE_STACK_KIB, QUICKJS_OPTIONS_SCHEMA, type QuickJsAdapterOptions } from './options'
import { captureScript, restoreScripts, topLevelNames, type SessionState } from './session'
import { packageVersions } from '../shared/engine-versions'

export const NAME = 'quickjs'

export { MAX_SAFE_STACK_KIB } from './options'

export type { QuickJsAdapterOptions, QuickJsOptions } from './options'

const LANGUAGES: readonly Language[] = ['javascript', 'typescript']

/**
 * JavaScript and TypeScript in QuickJS compiled to WebAssembly, in-process (tier 1), on a small pool of worker
 * threads. Every run gets a fresh runtime with the policy's memory limit and a deadline interrupt; a run stuck in
 * native code past its deadline costs one worker, never the host's event loop. No `process`, `require`, timers,
 * network or filesystem exist inside, and host functions cross as JSON only.
 */
/** Room the wasm stack and QuickJS's own structures keep between the malloc limit and the memory ceiling. */
const CEILING_HEADROOM_BYTES = 32 * 1024 * 1024

export class QuickJsAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  readonly capabilities: AdapterCapabilities = {
    engines: packageVersions(['quickjs-emscripten']),
    languages: LANGUAGES,
    tier: 1,
    isolation: 'wasm memory in a worker thread (QuickJS in WebAssembly, fresh runtime per run)',
    enforcement: enforcementTable({
      wallTime: 'hard',
      memory: 'hard',
      output: 'hard',
      // QuickJS has no sockets, files, modules or processes at all.
      network: 'hard',
      filesystem: 'hard',
      imports: 'hard',
      processes: 'hard',
      hostCalls: 'hard',
      // CPU time is bounded by wall time on one thread; it is not measured separately.
      cpuTime: 'soft',
    }),
    // Top-level JSON values and functions carry over; every call still gets a fresh runtime (see session.ts).
    sessions: true,
    hostFunctions: true,
    workspace: true,
    streaming: true,
    // Only through the `http_request` host function, which the egress gateway answers under the policy's rules.
    network: true,
    cancellable: true,
  }
  private readonly pool: WorkerPool<JobMessage, ToWorker>
  private readonly stackBytes: number
  private readonly linearMemoryMaxBytes: number
  private readonly recycleAboveBytes: number
  private readonly killGraceMs: number
  private nextJobId = 0
  private readonly sessions: SessionStore<SessionState>

  constructor(options: QuickJsAdapterOptions = {}) {
    const settings = withOptionDefaults(QUICKJS_OPTIONS_SCHEMA, options)
    const stackKiB = settings.maxStackKiB
    if (!Number.isInteger(stackKiB) || stackKiB < 16 || stackKiB > MAX_SAFE_STACK_KIB) {
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
        detail: `adapters.quickjs.maxStackKiB must be an integer from 16 to ${MAX_SAFE_STACK_KIB}: value was ${stackKiB}`,
      })
    }
    this.stackBytes = stackKiB * 1024
    this.killGraceMs = settings.killGraceMs
    this.linearMemoryMaxBytes = settings.maxMemoryMiB * 1024 * 1024
    this.recycleAboveBytes = settings.recycleAboveMiB * 1024 * 1024
    // The worker that answered last takes the next run: back to back, one worker takes every run (its next context
    // prepared while the caller handles the answer) and the other stays idle; two alternating cost ~25% more CPU a run.
    this.pool = new WorkerPool<JobMessage, ToWorker>(
      __dirname,
      'worker',
      'QuickJS',
      settings.workers,
      options.warmOnStart ?? true,
      { kind: 'thread' },
      'last-released',
    )
    // One run per worker thread: admission counts them as this adapter's slots.
    this.capabilities = { ...this.capabilities, concurrency: settings.workers }
    this.sessions = new SessionStore(NAME, options.sessions)
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    const started = performance.now()
    if (!LANGUAGES.includes(request.language)) {
      return createResult('invalid_request', NAME, {
        message: `[execgate] [quickjs] quickjs runs javascript and typescript, not ${request.language}`,
      })
    }
    let source: PreparedSource
    try {
      source = prepareSource(request.code, request.language as 'javascript' | 'typescript')
    } catch (error) {
      return createResult('error', NAME, { error: { type: 'SyntaxError', message: describeError(error) } })
    }
    let session: SessionState | undefined
    if (request.sessionId) {
      const opened = this.sessions.openForCall(request.sessionId)
      if ('refusal' in opened) return opened.refusal
      session = opened.state ?? {}
    }
    const output = new OutputCapture(context.policy.outputBytes, context.onOutput)
    const outputs = new OutputCollector(context.policy, context.onRichOutput)
    const outcome = await runWorkerJob(
      this.pool,
      {
        type: 'run',
        id: ++this.nextJobId,
        source,
        // Below the linear-memory ceiling, so QuickJS's own limit trips first and says "out of memory".
        memoryBytes: Math.min(context.policy.memoryMb * 1024 * 1024, this.linearMemoryMaxBytes - CEILING_HEADROOM_BYTES),
        stackBytes: this.stackBytes,
        linearMemoryMaxBytes: this.linearMemoryMaxBytes,
        recycleAboveBytes: this.recycleAboveBytes,
        remainingMs: Math.max(0, context.deadline - performance.now()),
        timeoutMs: context.policy.wallTimeMs,
        outputBytes: context.policy.outputBytes,
        maxOutputs: context.policy.maxOutputs,
        outputsBytes: context.policy.outputsBytes,
        hostFunctions: (context.hostFunctions?.list() ?? []).map((spec) => spec.name),
        ...(session
          ? {
              session: {
                restore: restoreScripts(session),
                capture: captureScript([...new Set([...Object.keys(session), ...topLevelNames(source.script)])]),
              },
            }
          : {}),
      },
      context,
      output,
      { label: NAME, killGraceMs: this.killGraceMs, outputs },
    )
    // display() items, sent while the code ran; items the worker left out for the limits make an ok run output_limit.
    const result = outputs.applyTo(resultFromJob(NAME, outcome, output, started), NAME, outcome.outputsOmitted)
    if (request.sessionId && session) {
      const captured = outcome.session
      const next =
        captured === undefined ? undefined : { bytes: Buffer.byteLength(captured), state: () => JSON.parse(captured) as SessionState }
      const message = this.sessions.keepAfterCall(request.sessionId, session, next)
      if (message) result.message = message
    }
    return result
  }

  async closeSession(sessionId: string): Promise<boolean> {
    return this.sessions.close(sessionId)
  }

  async validate(code: string, language: Language): Promise<ValidationReport> {
    // Syntax only: imports and calls are the policy's to judge, with the caller's allow-list.
    const syntax = language === 'typescript' ? parseTypeScript(code).syntax : parseJavaScript(code).syntax
    const issues = Array.isArray(syntax) ? syntax : syntax ? [syntax] : []
    return { valid: issues.length === 0, language, validator: NAME, issues, implemented: true }
  }

  supportedLanguages(): readonly Language[] {
    return LANGUAGES
  }

  async checkAvailability(): Promise<Availability> {
    const checkedAt = new Date().toISOString()
    if (this.pool.broken) return { status: 'unavailable', reason: `QuickJS workers cannot start: ${this.pool.lastFailure}`, checkedAt }
    const started = performance.now()
    const probe = await this.execute({ language: 'javascript', code: '1+1' }, internalContext('quickjs-availability', 10_000, 16))
    if (probe.status === 'ok' && probe.value === 2) return { status: 'available', latencyMs: performance.now() - started, checkedAt }
    return { status: 'unavailable', reason: `QuickJS probe answered ${probe.status}: ${probe.message ?? ''}`, checkedAt }
  }

  /** Resolves once one worker has loaded the QuickJS module and prepared a runtime for the next run. */
  warmUp(): Promise<void> {
    return this.pool.warmUp()
  }

  isWarm(): boolean {
    return this.pool.hasIdle
  }

  async dispose(): Promise<void> {
    this.sessions.clear()
    await this.pool.dispose()
  }
}

export function createQuickJsAdapter(options?: QuickJsAdapterOptions): QuickJsAdapter {
  return new QuickJsAdapter(options)
}
