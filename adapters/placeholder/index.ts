import {
  LANGUAGES,
  createResult,
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

export const NAME = 'placeholder'

export interface PlaceholderAdapterOptions {
  /** What to tell the caller instead of a result. @default 'Code execution coming soon' */
  message?: string
}

/**
 * The placeholder design's adapter: runs nothing, answers `not_implemented` with the advice to describe the
 * computation in words. Routing uses it as the last resort, so a voice agent can always say something useful.
 */
export class PlaceholderAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  readonly capabilities: AdapterCapabilities = {
    languages: LANGUAGES,
    tier: 0,
    isolation: 'none: nothing runs',
    // Nothing runs, so every limit trivially holds.
    enforcement: enforcementTable({
      wallTime: 'hard',
      cpuTime: 'hard',
      memory: 'hard',
      output: 'hard',
      network: 'hard',
      filesystem: 'hard',
      imports: 'hard',
      hostCalls: 'hard',
      processes: 'hard',
    }),
    sessions: false,
    hostFunctions: false,
    workspace: false,
    streaming: false,
    network: false,
    cancellable: true,
  }
  private readonly message: string

  constructor(options: PlaceholderAdapterOptions = {}) {
    this.message = options.message ?? 'Code execution coming soon'
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    return createResult('not_implemented', NAME, {
      traceId: context.traceId,
      message: `${this.message}: ${request.language} code is not executed here; describe the computation instead.`,
      fallbackAction: 'describe_computation_only',
    })
  }

  async validate(_code: string, language: Language): Promise<ValidationReport> {
    return {
      valid: false,
      language,
      validator: NAME,
      implemented: false,
      issues: [{ severity: 'warning', code: 'not_implemented', message: 'validation is not implemented by the placeholder adapter' }],
    }
  }

  supportedLanguages(): readonly Language[] {
    return LANGUAGES
  }

  async checkAvailability(): Promise<Availability> {
    return { status: 'available', checkedAt: new Date().toISOString(), latencyMs: 0 }
  }

  async dispose(): Promise<void> {}
}

export function createPlaceholderAdapter(options?: PlaceholderAdapterOptions): PlaceholderAdapter {
  return new PlaceholderAdapter(options)
}
