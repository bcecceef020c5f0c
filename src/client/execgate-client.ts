import type {
  ExecutionEvent,
  ExecutionRequest,
  ExecutionResult,
  Language,
  RemoteExecuteOptions,
  SandboxInfo,
  SandboxStartOptions,
  ValidationReport,
} from './client-types'
import { isExecgateClientError } from './client-error'
import { resultFromError } from './error-result'
import { collectExecution, toExecutionEvents } from './execution-events'
import { HttpTransport, type CallOptions, type TransportOptions } from './http-transport'
import { RemoteFiles, RemoteLedger } from './remote-ledger'
import { RemotePlans, RemoteTasks } from './remote-fabric'
import { RemoteSandbox } from './remote-sandbox'
import { RemoteUploads } from './remote-uploads'

export type ExecgateClientOptions = TransportOptions

/** `client.sandboxes`: persistent sandboxes an agent execs into (docs/sandboxes.md). */
export class RemoteSandboxes {
  constructor(private readonly http: HttpTransport) {}

  async start(options: SandboxStartOptions = {}, call?: CallOptions): Promise<RemoteSandbox> {
    const info = await this.http.json<SandboxInfo>('startSandbox', { json: options }, call)
    return new RemoteSandbox(this.http, info.id, info)
  }

  /** A handle on a live sandbox of this tenant's, or undefined when there is none by that id. */
  async get(id: string, call?: CallOptions): Promise<RemoteSandbox | undefined> {
    try {
      return new RemoteSandbox(this.http, id, await this.http.json<SandboxInfo>('getSandbox', { params: { id } }, call))
    } catch (error) {
      if (isExecgateClientError(error, 'EXECGATE_NOT_FOUND')) return undefined
      throw error
    }
  }

  async list(call?: CallOptions): Promise<SandboxInfo[]> {
    return (await this.http.json<{ sandboxes: SandboxInfo[] }>('listSandboxes', {}, call)).sandboxes
  }

  /** False when there was no such sandbox. */
  async stop(id: string, call?: CallOptions): Promise<boolean> {
    try {
      await this.http.send('stopSandbox', { params: { id } }, call)
      return true
    } catch (error) {
      if (isExecgateClientError(error, 'EXECGATE_NOT_FOUND')) return false
      throw error
    }
  }
}

/**
 * execgate over HTTP, for the process that calls it: `execute` and `stream` as the library's, and the fabric (tasks,
 * plans, sandboxes, ledger, files, uploads). Needs only the platform's fetch: Node 18+, Deno, Bun and browsers.
 *
 * `execute` never throws: a refusal or a failed request is an ExecutionResult too (`unavailable` with `retryAfterMs`,
 * `invalid_request`, `cancelled`…) whose `error.code` is the registry's. The other calls throw an ExecgateClientError
 * carrying that code. A 429 or 503 is retried after its `Retry-After` within the retry budget.
 */
export class ExecgateClient {
  readonly tasks: RemoteTasks
  readonly plans: RemotePlans
  readonly sandboxes: RemoteSandboxes
  readonly ledger: RemoteLedger
  readonly files: RemoteFiles
  readonly uploads: RemoteUploads
  private readonly http: HttpTransport

  constructor(options: ExecgateClientOptions) {
    this.http = new HttpTransport(options)
    this.tasks = new RemoteTasks(this.http)
    this.plans = new RemotePlans(this.http)
    this.sandboxes = new RemoteSandboxes(this.http)
    this.ledger = new RemoteLedger(this.http)
    this.files = new RemoteFiles(this.http)
    this.uploads = new RemoteUploads(this.http)
  }

  /** Runs code on the server; every outcome is an ExecutionResult, as in-process. */
  async execute(request: ExecutionRequest, options: RemoteExecuteOptions & CallOptions = {}): Promise<ExecutionResult> {
    const call = withProfile(options)
    try {
      if (options.onOutput)
        return await collectExecution(toExecutionEvents(this.http.events('execute', { json: request }, call)), options.onOutput)
      return await this.http.json<ExecutionResult>('execute', { json: request }, call)
    } catch (error) {
      if (isExecgateClientError(error)) return resultFromError(error, request.traceId, request.adapter)
      throw error
    }
  }

  /** Runs code and yields its output as produced, then `{ type: 'result' }` last (a failed request too, as a result). */
  async *stream(
    request: ExecutionRequest,
    options: Omit<RemoteExecuteOptions, 'onOutput'> & CallOptions = {},
  ): AsyncGenerator<ExecutionEvent> {
    try {
      yield* toExecutionEvents(this.http.events('execute', { json: request }, withProfile(options)))
    } catch (error) {
      if (!isExecgateClientError(error)) throw error
      yield { type: 'result', result: resultFromError(error, request.traceId, request.adapter) }
    }
  }

  /** Checks code without running it. */
  validate(code: string, language: Language, adapter?: string, options?: CallOptions): Promise<ValidationReport> {
    return this.http.json('validate', { json: { code, language, ...(adapter ? { adapter } : {}) } }, options)
  }

  async languages(options?: CallOptions): Promise<Language[]> {
    return (await this.http.json<{ languages: Language[] }>('languages', {}, options)).languages
  }

  /** Closes a session (`sessionId` of earlier requests); false when there was none. */
  async closeSession(id: string, options?: CallOptions): Promise<boolean> {
    try {
      await this.http.send('closeSession', { params: { id } }, options)
      return true
    } catch (error) {
      if (isExecgateClientError(error, 'EXECGATE_NOT_FOUND')) return false
      throw error
    }
  }
}

function withProfile(options: RemoteExecuteOptions & CallOptions): CallOptions {
  const { profile, onOutput: _onOutput, ...call } = options
  return profile ? { ...call, headers: { ...call.headers, 'x-execgate-profile': profile } } : call
}
