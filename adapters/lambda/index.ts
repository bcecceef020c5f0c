import { performance } from 'node:perf_hooks'
import type { LambdaClient } from '@aws-sdk/client-lambda'
import {
  EXECUTION_STATUSES,
  createResult,
  enforcementTable,
  importOptional,
  truncateOutput,
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
import { RunController } from '../../src/runtime'
import { withOptionDefaults } from '../shared/option-schema'
import { LAMBDA_OPTIONS_SCHEMA, type LambdaAdapterOptions, type LambdaOptions } from './options'
import { mapLambdaError, mapFunctionError } from './map-error'

export const NAME = 'lambda'

export type { LambdaAdapterOptions, LambdaOptions } from './options'

const LANGUAGES: readonly Language[] = ['javascript', 'typescript', 'python']
/** Lambda's synchronous payload limit. */
export const MAX_PAYLOAD_BYTES = 6 * 1024 * 1024
const AVAILABILITY_TIMEOUT_MS = 5000

/**
 * execgate's own Lambda function (deploy/lambda), invoked RequestResponse through
 * `@aws-sdk/client-lambda`; tier 2. The function runs the request with execgate's in-process adapters under the
 * policy this adapter sends (never looser than the function's own) and returns the ExecutionResult. Lambda fans out
 * to thousands of concurrent sandboxes; throttling and service failures answer `unavailable`, so routing falls back.
 */
export class LambdaAdapter implements CodeExecutionAdapter {
  readonly name = NAME
  readonly capabilities: AdapterCapabilities = {
    languages: LANGUAGES,
    tier: 2,
    isolation: "execgate's in-process sandboxes inside a Lambda microVM (Firecracker)",
    // The function enforces the policy it is sent with its own adapters (QuickJS and monty hold these hard).
    enforcement: enforcementTable({
      wallTime: 'hard',
      cpuTime: 'soft',
      memory: 'hard',
      output: 'hard',
      network: 'hard',
      filesystem: 'hard',
      imports: 'hard',
      processes: 'hard',
    }),
    sessions: false,
    hostFunctions: false,
    workspace: false,
    streaming: false,
    network: false,
    cancellable: true,
  }
  private readonly settings: LambdaOptions
  private client?: LambdaClient

  constructor(private readonly options: LambdaAdapterOptions = {}) {
    this.settings = withOptionDefaults(LAMBDA_OPTIONS_SCHEMA, options)
  }

  /** The SDK is loaded on first use. Credentials come from the standard AWS chain, never from execgate's config. */
  private async sdk() {
    const sdk = await importOptional('lambda', () => import('@aws-sdk/client-lambda'))
    this.client ??=
      this.options.client ??
      new sdk.LambdaClient({
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
        message: `[execgate] [lambda] the function runs ${LANGUAGES.join(', ')}, not ${request.language}`,
      })
    }
    const { adapter: _pinned, ...forwarded } = request
    const payload = Buffer.from(JSON.stringify({ request: { ...forwarded, traceId: context.traceId }, policy: context.policy }))
    if (payload.length > MAX_PAYLOAD_BYTES) {
      return createResult('invalid_request', NAME, {
        message:
          `[execgate] [lambda] the request is ${payload.length} bytes; Lambda takes at most ` + `${MAX_PAYLOAD_BYTES} bytes synchronously`,
      })
    }
    // The function holds the code to the policy's time itself; a cold start (pyodide's, say) is Lambda's time. So the
    // service's clock is paused and execgate waits up to the wall time plus a slack before giving up on the call.
    const run = new RunController(context)
    run.pauseClock()
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), context.policy.wallTimeMs + this.settings.invokeSlackMs)
    // The clock stays paused, so the controller only relays a cancel; the slack timer above bounds the wait.
    run.start({ onStop: () => controller.abort() })
    try {
      const { sdk, client } = await this.sdk()
      const response = await client.send(
        new sdk.InvokeCommand({
          FunctionName: this.settings.functionName,
          ...(this.settings.qualifier ? { Qualifier: this.settings.qualifier } : {}),
          InvocationType: 'RequestResponse',
          Payload: payload,
        }),
        { abortSignal: controller.signal },
      )
      const text = response.Payload ? Buffer.from(response.Payload).toString('utf8') : ''
      if (response.FunctionError) {
        const mapped = mapFunctionError(text, context.policy.wallTimeMs)
        return createResult(mapped.status, NAME, {
          message: `[execgate] [lambda] ${mapped.message}`,
          error: { type: mapped.type, message: mapped.message },
          usage: { wallMs: performance.now() - started },
        })
      }
      let inner: ExecutionResult
      try {
        inner = JSON.parse(text) as ExecutionResult
      } catch {
        return createResult('internal_error', NAME, {
          message: `[execgate] [lambda] the function answered something that is not JSON: ${text.slice(0, 200)}`,
        })
      }
      if (!inner || !EXECUTION_STATUSES.includes(inner.status)) {
        return createResult('internal_error', NAME, {
          message: `[execgate] [lambda] the function answered without a result status: ${text.slice(0, 200)}`,
        })
      }
      // The function already capped output under the same policy; cut again in case a deployment differs.
      const captured = truncateOutput(inner.stdout ?? '', inner.stderr ?? '', context.policy.outputBytes, valueBytes(inner.value))
      const truncated = inner.truncated || captured.truncated
      return createResult(inner.status, NAME, {
        ...captured,
        truncated,
        stdoutBytes: Math.max(inner.stdoutBytes ?? 0, captured.stdoutBytes),
        stderrBytes: Math.max(inner.stderrBytes ?? 0, captured.stderrBytes),
        value: inner.value,
        error: inner.error,
        message: inner.message,
        usage: { ...inner.usage, wallMs: performance.now() - started },
        route: { reason: `ran on ${inner.adapter} inside the Lambda function ${this.settings.functionName}` },
      })
    } catch (error) {
      if (controller.signal.aborted) {
        const cancelled = context.signal.aborted
        return createResult(cancelled ? 'cancelled' : 'timeout', NAME, {
          message: cancelled
            ? 'the run was cancelled; the invocation was abandoned'
            : `the function did not answer within ${context.policy.wallTimeMs + this.settings.invokeSlackMs} ms`,
          usage: { wallMs: performance.now() - started },
        })
      }
      const mapped = mapLambdaError(error, this.settings.functionName)
      return createResult(mapped.status, NAME, {
        message: `[execgate] [lambda] ${mapped.message}`,
        error: { type: mapped.type, message: mapped.message },
        usage: { wallMs: performance.now() - started },
      })
    } finally {
      clearTimeout(timer)
      run.settle()
    }
  }

  async validate(_code: string, language: Language): Promise<ValidationReport> {
    const supported = LANGUAGES.includes(language)
    return {
      valid: supported,
      language,
      validator: NAME,
      issues: supported
        ? []
        : [{ severity: 'error', code: 'unsupported', message: `the function runs ${LANGUAGES.join(', ')}, not ${language}` }],
      implemented: false,
    }
  }

  /** A ping invocation (the function answers at once, nothing runs), with a timeout. */
  async checkAvailability(): Promise<Availability> {
    const checkedAt = new Date().toISOString()
    const started = performance.now()
    try {
      const { sdk, client } = await this.sdk()
      const response = await client.send(
        new sdk.InvokeCommand({
          FunctionName: this.settings.functionName,
          ...(this.settings.qualifier ? { Qualifier: this.settings.qualifier } : {}),
          Payload: Buffer.from('{"ping":true}'),
        }),
        { abortSignal: AbortSignal.timeout(AVAILABILITY_TIMEOUT_MS) },
      )
      const text = response.Payload ? Buffer.from(response.Payload).toString('utf8') : ''
      if (response.FunctionError || !text.includes('pong'))
        return {
          status: 'unavailable',
          reason: `the function answered the ping with ${response.FunctionError ?? 'something else'}: ${text.slice(0, 200)}`,
          checkedAt,
        }
      return { status: 'available', latencyMs: performance.now() - started, checkedAt }
    } catch (error) {
      return { status: 'unavailable', reason: mapLambdaError(error, this.settings.functionName).message, checkedAt }
    }
  }

  async dispose(): Promise<void> {
    this.client?.destroy()
  }
}
