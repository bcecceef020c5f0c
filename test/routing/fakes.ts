import { QuickJsAdapter } from '../../adapters/quickjs'
import {
  createResult,
  enforcementTable,
  type AdapterCapabilities,
  type Availability,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type Language,
  type Tier,
  type ValidationReport,
} from '../../src/core'

/**
 * A real QuickJS adapter under another name, whose backend can be switched off: `down` makes every call answer
 * `unavailable` (or throw, with `crash`) and its availability check fail. Stands for a remote backend that comes
 * and goes (the placeholder design's future adapter), with real code running when it is up.
 */
export class SwitchableAdapter implements CodeExecutionAdapter {
  down = false
  crash = false
  calls = 0
  /** How long its availability check takes to answer (a backend still starting up). */
  checkDelayMs = 0
  readonly capabilities: AdapterCapabilities

  constructor(
    readonly name: string,
    private readonly inner: QuickJsAdapter,
    tier: Tier = 2,
  ) {
    this.capabilities = { ...inner.capabilities, tier }
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    this.calls++
    if (this.crash) throw new Error(`${this.name} backend crashed`)
    if (this.down) return createResult('unavailable', this.name, { message: `[execgate] [${this.name}] backend unreachable` })
    return { ...(await this.inner.execute(request, context)), adapter: this.name }
  }

  validate(code: string, language: Language): Promise<ValidationReport> {
    return this.inner.validate(code, language)
  }

  supportedLanguages(): readonly Language[] {
    return this.inner.supportedLanguages()
  }

  async checkAvailability(): Promise<Availability> {
    if (this.checkDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.checkDelayMs))
    const checkedAt = new Date().toISOString()
    return this.down
      ? { status: 'unavailable', reason: `${this.name} backend unreachable`, checkedAt }
      : { status: 'available', latencyMs: 1, checkedAt }
  }

  // Warming the wrapper warms the QuickJS pool inside it, so createExecgate() hands back a wrapper whose first run
  // pays no worker start (a cold worker on a loaded machine outlasted a 5 s limit here).
  warmUp(): Promise<void> {
    return this.inner.warmUp()
  }

  isWarm(): boolean {
    return this.inner.isWarm()
  }

  async dispose(): Promise<void> {
    await this.inner.dispose()
  }
}

/**
 * An adapter that claims hard limits and holds none: every run "succeeds" at once, an infinite loop included.
 * What an adapter whose enforcement silently stopped working looks like from outside; the canaries must catch it.
 */
export class LeakyAdapter implements CodeExecutionAdapter {
  readonly name = 'leaky'
  readonly capabilities: AdapterCapabilities = {
    languages: ['javascript'],
    tier: 1,
    isolation: 'none (a test double)',
    enforcement: enforcementTable({ wallTime: 'hard', memory: 'hard', output: 'hard' }),
    sessions: false,
    hostFunctions: false,
    workspace: false,
    streaming: false,
    network: false,
    cancellable: false,
  }

  async execute(): Promise<ExecutionResult> {
    return createResult('ok', this.name, { stdout: 'done\n' })
  }

  async validate(_code: string, language: Language): Promise<ValidationReport> {
    return { valid: true, language, validator: this.name, issues: [], implemented: true }
  }

  supportedLanguages(): readonly Language[] {
    return ['javascript']
  }

  async checkAvailability(): Promise<Availability> {
    return { status: 'available', checkedAt: new Date().toISOString() }
  }

  async dispose(): Promise<void> {}
}
