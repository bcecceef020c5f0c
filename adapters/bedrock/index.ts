import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type { BedrockAgentCoreClient } from '@aws-sdk/client-bedrock-agentcore'
import {
  OutputCapture,
  createResult,
  enforcementTable,
  importOptional,
  valueBytes,
  type AdapterCapabilities,
  type Availability,
  type CodeExecutionAdapter,
  type ExecutionContext,
  type ExecutionRequest,
  type ExecutionResult,
  type ExecutionStatus,
  type Language,
  type ValidationReport,
} from '../../src/core'
import { RunController } from '../../src/runtime'
import { withOptionDefaults } from '../shared/option-schema'
import { BEDROCK_OPTIONS_SCHEMA, type BedrockAdapterOptions, type BedrockOptions } from './options'
import { stripTypeScript } from '../../src/runtime'
import { RECORD_SEPARATOR, parseReport } from '../shared/run-report'
import { mapAwsError } from './map-error'
import { wrapJavaScript, wrapPython } from './wrap'

export const NAME = 'bedrock'

export type { BedrockAdapterOptions, BedrockOptions } from './options'

const LANGUAGES: readonly Language[] = ['python', 'javascript', 'typescript']
const AVAILABILITY_TIMEOUT_MS = 10_000
/** Longest a session start may take before the run is answered `unavailable`. */
const START_TIMEOUT_MS = 30_000

interface HeldSession {
  awsSessionId: string
  lastUsed: number
  busy: boolean
}

/**
 * AWS Bedrock AgentCore's Code Interpreter (the backend the placeholder design waited for), tier 2. One AgentCore
 * session per execution, stopped after it; a request with `sessionId` keeps its AgentCore session (and so its
 * variables) across calls until it is idle for `idleSessionMs`, the adapter is disposed or the process exits.
 */
export class BedrockAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  readonly capabilities: AdapterCapabilities = {
    languages: LANGUAGES,
    tier: 2,
    isolation: "AWS's Code Interpreter sandbox (remote microVM)",
    enforcement: enforcementTable({
      wallTime: 'hard', // execgate stops waiting and stops the session at the deadline
      output: 'soft', // cut when the result arrives
      filesystem: 'hard', // a remote sandbox: never the host's files
      network: 'soft', // the interpreter's network mode is AWS configuration
      imports: 'soft', // the policy's static check
    }),
    sessions: true,
    hostFunctions: false,
    workspace: false,
    streaming: false,
    network: false,
    cancellable: true,
  }
  private readonly settings: BedrockOptions
  private client?: BedrockAgentCoreClient
  private readonly sessions = new Map<string, HeldSession>()
  private readonly idleTimer: NodeJS.Timeout
  private readonly onExit = () => void this.stopAll()

  constructor(private readonly options: BedrockAdapterOptions = {}) {
    this.settings = withOptionDefaults(BEDROCK_OPTIONS_SCHEMA, options)
    this.idleTimer = setInterval(() => void this.stopIdle(), Math.min(this.settings.idleSessionMs, 30_000)).unref()
    process.once('beforeExit', this.onExit)
  }

  /** The SDK is loaded on first use. Credentials come from the standard AWS chain, never from execgate's config. */
  private async sdk() {
    const sdk = await importOptional('bedrock', () => import('@aws-sdk/client-bedrock-agentcore'))
    this.client ??=
      this.options.client ??
      new sdk.BedrockAgentCoreClient({
        region: this.settings.region,
        ...(this.settings.endpoint ? { endpoint: this.settings.endpoint } : {}),
        maxAttempts: 2,
      })
    return { sdk, client: this.client }
  }

  supportedLanguages(): readonly Language[] {
    return LANGUAGES
  }

  async execute(request: ExecutionRequest, context: ExecutionContext): Promise<ExecutionResult> {
    const started = performance.now()
    if (!LANGUAGES.includes(request.language)) {
      return createResult('invalid_request', NAME, {
        message: `[execgate] [bedrock] AgentCore's Code Interpreter runs ${LANGUAGES.join(', ')}, not ${request.language}`,
      })
    }
    const controller = new AbortController()
    let timer: NodeJS.Timeout | undefined
    // The deadline and a cancel both abort the SDK call under way (the session start, the invoke).
    const run = new RunController(context).start({
      onStop: (cause) => controller.abort(new Error(cause === 'cancelled' ? 'cancelled' : 'deadline')),
    })
    let awsSessionId: string | undefined
    let held: HeldSession | undefined
    try {
      const { sdk, client } = await this.sdk()
      held = request.sessionId ? this.sessions.get(request.sessionId) : undefined
      if (held?.busy)
        return createResult('invalid_request', NAME, {
          message: `[execgate] [bedrock] session ${request.sessionId} is running another call; calls in one session run one at a time`,
        })
      if (!held) {
        // Starting a session is AWS's time, not the code's: the code's clock starts at the invoke.
        run.pauseClock()
        timer = setTimeout(() => controller.abort(new Error('deadline')), START_TIMEOUT_MS)
        const startedSession = await client.send(
          new sdk.StartCodeInterpreterSessionCommand({
            codeInterpreterIdentifier: this.settings.codeInterpreter,
            name: `execgate-${context.traceId}`.slice(0, 100),
            sessionTimeoutSeconds: this.settings.sessionTimeoutSeconds,
          }),
          { abortSignal: controller.signal },
        )
        held = { awsSessionId: startedSession.sessionId!, lastUsed: Date.now(), busy: false }
        if (request.sessionId) this.sessions.set(request.sessionId, held)
      }
      awsSessionId = held.awsSessionId
      held.busy = true
      clearTimeout(timer)
      run.restartClock()
      const nonce = randomBytes(12).toString('hex')
      const { language, code } = await this.wrap(request, nonce, context.policy.allowedImports)
      const response = await client.send(
        new sdk.InvokeCodeInterpreterCommand({
          codeInterpreterIdentifier: this.settings.codeInterpreter,
          sessionId: awsSessionId,
          name: 'executeCode',
          arguments: { language, code },
        }),
        { abortSignal: controller.signal },
      )
      let stdout = ''
      let stderr = ''
      let exitCode: number | undefined
      for await (const event of response.stream ?? []) {
        if (event.result) {
          const content = event.result.structuredContent
          stdout += content?.stdout ?? ''
          stderr += content?.stderr ?? ''
          exitCode = content?.exitCode ?? exitCode
          if (!content) stdout += (event.result.content ?? []).map((block) => block.text ?? '').join('')
        }
      }
      const marker = RECORD_SEPARATOR + nonce
      const at = stdout.lastIndexOf(marker)
      const report = at === -1 ? undefined : parseReport(stdout.slice(at + marker.length).trim())
      if (at !== -1) stdout = stdout.slice(0, at)
      const output = new OutputCapture(context.policy.outputBytes)
      output.write('stdout', stdout)
      output.write('stderr', stderr)
      let status: ExecutionStatus = report?.ok ? 'ok' : report?.error || (exitCode ?? 0) !== 0 ? 'error' : 'ok'
      const reported = report?.error ? { ...report.error, message: report.error.message || report.error.type } : undefined
      const error =
        reported ??
        (status === 'error'
          ? { type: 'ExitError', message: `the code exited with code ${exitCode}: ${stderr.trim().split('\n').pop() ?? ''}` }
          : undefined)
      // With no report the interpreter died: its stderr says why, and the telling line is not always the last (V8
      // prints a native stack after "JavaScript heap out of memory"; a C++ allocation failure says std::bad_alloc).
      const outOfMemory = /out of memory|Allocation failed|std::bad_alloc|MemoryError/i
      if (error && (error.type === 'MemoryError' || outOfMemory.test(error.message) || (!report && outOfMemory.test(stderr)))) {
        status = 'memory_limit'
        error.message = `memory limit reached: ${error.message}`
      }
      const captured = output.finish(valueBytes(report?.value))
      // Cut output, and no report (the run was stopped at the far end's own cap): the flood is the cause.
      if (captured.truncated && (status === 'ok' || !report)) status = 'output_limit'
      return createResult(status, NAME, {
        ...captured,
        value: report?.value,
        error,
        usage: { wallMs: performance.now() - started, outputBytes: output.totalBytes },
      })
    } catch (error) {
      if (controller.signal.aborted && !awsSessionId && !context.signal.aborted) {
        return createResult('unavailable', NAME, {
          message: `[execgate] [bedrock] starting an interpreter session took longer than ${START_TIMEOUT_MS} ms`,
          usage: { wallMs: performance.now() - started },
        })
      }
      if (controller.signal.aborted) {
        // The remote run may still be going: its session is stopped, never reused.
        if (request.sessionId) this.sessions.delete(request.sessionId)
        if (awsSessionId) void this.stopSession(awsSessionId)
        awsSessionId = undefined
        const cancelled = context.signal.aborted
        return createResult(cancelled ? 'cancelled' : 'timeout', NAME, {
          message: cancelled
            ? 'the run was cancelled; its interpreter session was stopped'
            : `execution passed the ${context.policy.wallTimeMs} ms time limit; its interpreter session was stopped`,
          usage: { wallMs: performance.now() - started },
        })
      }
      if (request.sessionId) this.sessions.delete(request.sessionId)
      const mapped = mapAwsError(error)
      return createResult(mapped.status, NAME, {
        message: `[execgate] [bedrock] ${mapped.message}`,
        error: { type: mapped.type, message: mapped.message },
        usage: { wallMs: performance.now() - started },
      })
    } finally {
      clearTimeout(timer)
      run.settle()
      if (held) {
        held.busy = false
        held.lastUsed = Date.now()
      }
      // A one-off session ends with its run.
      if (awsSessionId && !request.sessionId) void this.stopSession(awsSessionId)
    }
  }

  /** The code as sent: wrapped to report its value; TypeScript transpiled here and sent as JavaScript. */
  private async wrap(
    request: ExecutionRequest,
    nonce: string,
    allowedImports: readonly string[],
  ): Promise<{ language: 'python' | 'javascript'; code: string }> {
    if (request.language === 'python') return { language: 'python', code: wrapPython(request.code, nonce, allowedImports) }
    let source = request.code
    // Code that does not parse goes as it is: the interpreter answers its SyntaxError, as for JavaScript.
    if (request.language === 'typescript') source = stripTypeScript(source).javascript ?? source
    return { language: 'javascript', code: wrapJavaScript(source, nonce) }
  }

  /** Closes an execgate session: stops its AgentCore session. */
  async closeSession(sessionId: string): Promise<boolean> {
    const held = this.sessions.get(sessionId)
    if (!held) return false
    this.sessions.delete(sessionId)
    await this.stopSession(held.awsSessionId)
    return true
  }

  private async stopSession(awsSessionId: string): Promise<void> {
    try {
      const { sdk, client } = await this.sdk()
      await client.send(
        new sdk.StopCodeInterpreterSessionCommand({ codeInterpreterIdentifier: this.settings.codeInterpreter, sessionId: awsSessionId }),
        { abortSignal: AbortSignal.timeout(5000) },
      )
    } catch {
      // AWS ends it after sessionTimeoutSeconds anyway
    }
  }

  private async stopIdle(): Promise<void> {
    const now = Date.now()
    for (const [sessionId, held] of this.sessions) {
      if (!held.busy && now - held.lastUsed > this.settings.idleSessionMs) await this.closeSession(sessionId)
    }
  }

  private async stopAll(): Promise<void> {
    await Promise.allSettled([...this.sessions.keys()].map((sessionId) => this.closeSession(sessionId)))
  }

  async validate(_code: string, language: Language): Promise<ValidationReport> {
    const supported = LANGUAGES.includes(language)
    return {
      valid: supported,
      language,
      validator: NAME,
      issues: supported
        ? []
        : [
            {
              severity: 'error',
              code: 'unsupported',
              message: `AgentCore's Code Interpreter runs ${LANGUAGES.join(', ')}, not ${language}`,
            },
          ],
      implemented: false,
    }
  }

  /** Starts and stops a session (the cheapest call that proves credentials, region and quota), with a timeout. */
  async checkAvailability(): Promise<Availability> {
    const checkedAt = new Date().toISOString()
    const started = performance.now()
    try {
      const { sdk, client } = await this.sdk()
      const signal = AbortSignal.timeout(AVAILABILITY_TIMEOUT_MS)
      const session = await client.send(
        new sdk.StartCodeInterpreterSessionCommand({
          codeInterpreterIdentifier: this.settings.codeInterpreter,
          name: 'execgate-availability',
          sessionTimeoutSeconds: 60,
        }),
        { abortSignal: signal },
      )
      await client.send(
        new sdk.StopCodeInterpreterSessionCommand({
          codeInterpreterIdentifier: this.settings.codeInterpreter,
          sessionId: session.sessionId!,
        }),
        { abortSignal: signal },
      )
      return { status: 'available', latencyMs: performance.now() - started, checkedAt }
    } catch (error) {
      return { status: 'unavailable', reason: mapAwsError(error).message, checkedAt }
    }
  }

  async dispose(): Promise<void> {
    clearInterval(this.idleTimer)
    process.off('beforeExit', this.onExit)
    await this.stopAll()
  }
}
