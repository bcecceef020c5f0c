import { performance } from 'node:perf_hooks'
import type { QuickJSWASMModule } from 'quickjs-emscripten'
import {
  ExecgateError,
  OutputCapture,
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
  type Language,
  type ValidationReport,
} from '../../src/core'
import { checkJavaScript, checkTypeScript } from '../../src/policy'
import { prepareSource } from './prepare-source'
import { QuickJsRun } from './run'

export const NAME = 'quickjs'

/** The largest stack QuickJS may use before deep recursion can overflow the host stack instead. */
export const MAX_SAFE_STACK_KIB = 256

export interface QuickJsAdapterOptions {
  /** QuickJS stack limit in KiB, at most 256. @default 256 */
  maxStackKiB?: number
  /** A QuickJS WebAssembly module to use instead of loading one (tests, custom builds). */
  module?: QuickJSWASMModule
}

const LANGUAGES: readonly Language[] = ['javascript', 'typescript']

async function loadModule(): Promise<QuickJSWASMModule> {
  // Imported lazily so that an execgate without quickjs enabled never loads the WebAssembly.
  const { newQuickJSWASMModule } = await import('quickjs-emscripten')
  return newQuickJSWASMModule()
}

/**
 * JavaScript and TypeScript in QuickJS compiled to WebAssembly, in-process (tier 1). Every run gets a fresh
 * runtime with the policy's memory limit and a deadline interrupt; no `process`, `require`, timers, network or
 * filesystem exist inside, and host functions cross as JSON only.
 */
export class QuickJsAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  readonly capabilities: AdapterCapabilities = {
    languages: LANGUAGES,
    tier: 1,
    isolation: 'wasm memory (QuickJS in WebAssembly, fresh runtime per run)',
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
    sessions: false,
    hostFunctions: true,
    workspace: true,
    streaming: true,
    network: false,
  }
  private module: Promise<QuickJSWASMModule>
  private readonly stackBytes: number

  constructor(options: QuickJsAdapterOptions = {}) {
    const stackKiB = options.maxStackKiB ?? MAX_SAFE_STACK_KIB
    if (!Number.isInteger(stackKiB) || stackKiB < 16 || stackKiB > MAX_SAFE_STACK_KIB) {
      throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
        detail: `adapters.quickjs.maxStackKiB must be an integer from 16 to ${MAX_SAFE_STACK_KIB}: value was ${stackKiB}`,
      })
    }
    this.stackBytes = stackKiB * 1024
    this.module = options.module ? Promise.resolve(options.module) : loadModule()
    this.module.catch(() => undefined) // reported by checkAvailability and execute, not as an unhandled rejection
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    const started = performance.now()
    const output = new OutputCapture(context.policy.outputBytes, context.onOutput)
    let module: QuickJSWASMModule
    try {
      module = await this.module
    } catch (error) {
      return createResult('unavailable', NAME, { message: `[execgate] [quickjs] the QuickJS module failed to load: ${describeError(error)}` })
    }
    if (!LANGUAGES.includes(request.language)) {
      return createResult('invalid_request', NAME, { message: `[execgate] [quickjs] quickjs runs javascript and typescript, not ${request.language}` })
    }
    let source
    try {
      source = prepareSource(request.code, request.language as 'javascript' | 'typescript')
    } catch (error) {
      return createResult('error', NAME, { error: { type: 'SyntaxError', message: describeError(error) } })
    }
    let run: QuickJsRun | undefined
    try {
      run = new QuickJsRun(module, {
        memoryBytes: context.policy.memoryMb * 1024 * 1024,
        stackBytes: this.stackBytes,
        deadline: Math.min(context.deadline, started + context.policy.wallTimeMs),
        timeoutMs: context.policy.wallTimeMs,
      }, output, context)
      const outcome = await run.execute(source)
      const captured = output.finish(valueBytes(outcome.value))
      const status = outcome.status === 'ok' && captured.truncated ? 'output_limit' : outcome.status
      return createResult(status, NAME, {
        ...captured,
        value: outcome.value,
        error: outcome.error,
        usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes },
      })
    } catch (error) {
      // Anything thrown here came from the WebAssembly module itself, not from the user's code.
      this.replaceModule()
      return createResult('internal_error', NAME, { ...output.finish(), message: `[execgate] [quickjs] the QuickJS engine failed: ${describeError(error)}` })
    } finally {
      if (run && !run.dispose()) this.replaceModule()
    }
  }

  /** A module that failed mid-run may hold corrupted memory: the next run gets a new instance. */
  private replaceModule(): void {
    this.module = loadModule()
    this.module.catch(() => undefined)
  }

  async validate(code: string, language: Language): Promise<ValidationReport> {
    // Syntax only: imports and calls are the policy's to judge, with the caller's allow-list.
    const everything = { allowedImports: [] as string[] }
    const issues = (language === 'typescript' ? checkTypeScript(code, everything) : checkJavaScript(code, everything)).filter(
      (item) => item.code === 'syntax',
    )
    return { valid: issues.length === 0, language, validator: NAME, issues, implemented: true }
  }

  supportedLanguages(): readonly Language[] {
    return LANGUAGES
  }

  async checkAvailability(): Promise<Availability> {
    const started = performance.now()
    try {
      const module = await this.module
      const result = module.evalCode('1+1')
      if (result !== 2) throw new Error(`1+1 evaluated to ${String(result)}`)
      return { status: 'available', latencyMs: performance.now() - started, checkedAt: new Date().toISOString() }
    } catch (error) {
      return { status: 'unavailable', reason: `QuickJS WebAssembly module not usable: ${describeError(error)}`, checkedAt: new Date().toISOString() }
    }
  }

  async dispose(): Promise<void> {}
}

export function createQuickJsAdapter(options?: QuickJsAdapterOptions): QuickJsAdapter {
  return new QuickJsAdapter(options)
}
