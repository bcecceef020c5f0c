import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import {
  ExecgateError,
  OutputCapture,
  createResult,
  describeError,
  enforcementTable,
  isExecgateError,
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
import { mapMontyError } from './map-error'
import { toJsonValue } from './to-json'

export const NAME = 'monty'

export interface MontyAdapterOptions {
  /** Deepest Python call stack allowed; monty raises RecursionError past it. @default 200 */
  maxRecursionDepth?: number
}

type MontyModule = typeof import('@pydantic/monty')

const LANGUAGES: readonly Language[] = ['python']

/** Thrown from the print callback to stop a run whose output passed the cap; recognised by identity. */
const OUTPUT_CAP = new Error('execgate: output limit reached')

/**
 * Python through @pydantic/monty, a Python-subset interpreter in Rust, in-process (tier 1): about 10 µs a run.
 * Every run gets the policy's memory and time limits and a recursion limit — without `maxMemory` an allocation
 * failure would abort the whole Node process — and a print callback, without which `print` would write to the
 * host's own stdout. Monty has no filesystem, network, subprocess or `__import__`; sandboxed code reaches the host
 * only through the run's host functions.
 */
export class MontyAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  readonly capabilities: AdapterCapabilities = {
    languages: LANGUAGES,
    tier: 1,
    isolation: 'own interpreter (monty, Rust), no OS access',
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
    sessions: false,
    hostFunctions: true,
    workspace: true,
    // print reaches onOutput as it happens, but the run holds the event loop until it ends: not true streaming.
    streaming: false,
    network: false,
    cancellable: false,
  }
  private readonly maxRecursionDepth: number
  private monty: MontyModule | undefined

  constructor(options: MontyAdapterOptions = {}) {
    this.maxRecursionDepth = options.maxRecursionDepth ?? 200
    if (!Number.isInteger(this.maxRecursionDepth) || this.maxRecursionDepth < 10) {
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', { detail: `adapters.monty.maxRecursionDepth must be an integer of 10 or more: value was ${options.maxRecursionDepth}` })
    }
  }

  private load(): MontyModule {
    // Loaded on first use: the native binding costs nothing until Python is asked for. The package is ESM; Node's
    // own require (20.19+ loads ESM synchronously) works where a bundler's or Jest's module system would not.
    this.monty ??= createRequire(__filename)('@pydantic/monty') as MontyModule
    return this.monty
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    const started = performance.now()
    if (request.language !== 'python') {
      return createResult('invalid_request', NAME, { message: `[execgate] [monty] monty runs python, not ${request.language}` })
    }
    if (context.signal.aborted) return createResult('cancelled', NAME, { message: '[execgate] [monty] the run was cancelled before it started' })
    let monty: MontyModule
    try {
      monty = this.load()
    } catch (error) {
      return createResult('unavailable', NAME, { message: `[execgate] [monty] the monty binding failed to load: ${describeError(error)}` })
    }
    const output = new OutputCapture(context.policy.outputBytes, context.onOutput)
    const printCallback = (stream: string, text: string) => {
      if (!output.write(stream === 'stderr' ? 'stderr' : 'stdout', text)) throw OUTPUT_CAP
    }
    const remainingSecs = Math.max(0.001, (context.deadline - performance.now()) / 1000)
    const limits = { maxDurationSecs: remainingSecs, maxMemory: context.policy.memoryMb * 1024 * 1024, maxRecursionDepth: this.maxRecursionDepth }
    let status: ExecutionResult['status'] = 'ok'
    let value: unknown
    let error: ExecutionResult['error']
    let hostCalls = 0
    try {
      const program = new monty.Monty(request.code, { scriptName: 'main.py' })
      if (context.hostFunctions && context.hostFunctions.list().length > 0) {
        const run = await this.runWithHostFunctions(monty, program, { limits, printCallback }, context)
        value = run.value
        hostCalls = run.calls
      } else {
        value = program.run({ limits, printCallback })
      }
      value = toJsonValue(value)
    } catch (caught) {
      value = undefined
      if (output.exceeded) {
        status = 'output_limit'
        error = { type: 'OutputLimit', message: 'output passed the limit; the run was stopped' }
      } else if (isExecgateError(caught, 'EXECGATE_HOST_CALL_BUDGET')) {
        status = 'policy_violation'
        error = { type: 'PolicyViolation', code: caught.code, message: caught.message }
      } else if (caught === DEADLINE) {
        status = 'timeout'
        error = { type: 'TimeoutError', message: `execution passed the ${context.policy.wallTimeMs} ms time limit` }
      } else {
        ;({ status, error } = mapMontyError(caught))
      }
    }
    const captured = output.finish(valueBytes(value))
    if (status === 'ok' && captured.truncated) status = 'output_limit'
    return createResult(status, NAME, {
      ...captured,
      value,
      error,
      usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes, ...(hostCalls ? { hostCalls } : {}) },
    })
  }

  /**
   * The start/resume loop: each call to a host function suspends the interpreter, the host answers (async), and
   * the interpreter resumes. Time spent waiting on the host counts against the deadline.
   */
  private async runWithHostFunctions(
    monty: MontyModule,
    program: InstanceType<MontyModule['Monty']>,
    options: { limits: object; printCallback: (stream: string, text: string) => void },
    context: ExecutionContext,
  ): Promise<{ value: unknown; calls: number }> {
    const hostFunctions = context.hostFunctions!
    let calls = 0
    let progress: unknown = program.start(options)
    for (;;) {
      if (progress instanceof monty.MontyComplete) return { value: progress.output, calls }
      if (performance.now() > context.deadline || context.signal.aborted) throw DEADLINE
      if (progress instanceof monty.MontyNameLookup) {
        const name = progress.variableName
        // Resolving the name to a marker function makes monty call back here through a snapshot.
        progress = hostFunctions.has(name) ? progress.resume({ value: () => undefined }) : progress.resume()
        continue
      }
      const snapshot = progress as InstanceType<MontyModule['MontySnapshot']>
      calls++
      try {
        const args = (snapshot.args as unknown[]).map((arg) => toJsonValue(arg))
        const result = await hostFunctions.call(snapshot.functionName, args)
        progress = snapshot.resume({ returnValue: result })
      } catch (error) {
        if (isExecgateError(error, 'EXECGATE_HOST_CALL_BUDGET')) throw error
        progress = snapshot.resume({ exception: { type: 'PermissionError', message: describeError(error) } })
      }
    }
  }

  async validate(code: string, language: Language): Promise<ValidationReport> {
    const report = (issues: ValidationReport['issues']): ValidationReport => ({
      valid: !issues.some((issue) => issue.severity === 'error'),
      language,
      validator: NAME,
      issues,
      implemented: true,
    })
    if (language !== 'python') return report([{ severity: 'error', code: 'unsupported', message: `monty runs python, not ${language}` }])
    try {
      new (this.load().Monty)(code, { scriptName: 'main.py' })
      return report([])
    } catch (error) {
      const mapped = mapMontyError(error)
      const code = mapped.error.type === 'NotSupported' ? 'unsupported' : 'syntax'
      return report([{ severity: 'error', code, message: mapped.error.message, line: mapped.error.line, column: mapped.error.column }])
    }
  }

  /** Whether monty can run this code at all (it parses everything it supports up front). */
  canRun(code: string): { ok: boolean; reason?: string } {
    try {
      new (this.load().Monty)(code, { scriptName: 'main.py' })
      return { ok: true }
    } catch (error) {
      const mapped = mapMontyError(error)
      return mapped.error.type === 'NotSupported' ? { ok: false, reason: mapped.error.message } : { ok: true }
    }
  }

  supportedLanguages(): readonly Language[] {
    return LANGUAGES
  }

  async checkAvailability(): Promise<Availability> {
    const started = performance.now()
    const checkedAt = new Date().toISOString()
    try {
      const value = new (this.load().Monty)('1 + 1').run({ limits: { maxDurationSecs: 1, maxMemory: 1 << 20 }, printCallback: () => undefined })
      if (value !== 2) throw new Error(`1 + 1 evaluated to ${String(value)}`)
      return { status: 'available', latencyMs: performance.now() - started, checkedAt }
    } catch (error) {
      return { status: 'unavailable', reason: `monty is not usable here: ${describeError(error)}`, checkedAt }
    }
  }

  async dispose(): Promise<void> {}
}

/** Thrown inside the host-function loop when the deadline passes between resumes. */
const DEADLINE = new Error('execgate: deadline')

export function createMontyAdapter(options?: MontyAdapterOptions): MontyAdapter {
  return new MontyAdapter(options)
}
