import { ExecgateClientError } from './client-error'
import { CLIENT_ROUTES, routePath, type RouteName } from './client-routes'
import { DEFAULT_RETRY, nextDelay, parseRetryAfter, sleep, type RetryOptions } from './retry-budget'
import { readSse, type SseMessage } from './sse'

export interface TransportOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:8080`. */
  url: string
  /** Sent as `Authorization: Bearer <apiKey>`; none for an open loopback server. */
  apiKey?: string
  /** The platform's fetch by default; pass one to add a proxy, logging or a test recorder. */
  fetch?: typeof fetch
  retry?: RetryOptions
  /** Sent with every request (e.g. `X-Execgate-Profile`). */
  headers?: Record<string, string>
}

/** Per call: cancellation, a retry budget of its own, extra headers. */
export interface CallOptions {
  signal?: AbortSignal
  retry?: RetryOptions
  headers?: Record<string, string>
}

export interface RequestInit {
  params?: Record<string, string>
  query?: Record<string, string | number | undefined>
  json?: unknown
  /** Sent as application/octet-stream; a Blob is streamed from where it lives (a file in Node's fs.openAsBlob). */
  bytes?: Uint8Array | Blob | string
  accept?: string
}

/** One HTTP exchange with the server: auth, retries of 429 and 503 after `Retry-After`, errors by code, cancellation. */
export class HttpTransport {
  private readonly base: string
  private readonly fetchImpl: typeof fetch

  constructor(private readonly options: TransportOptions) {
    if (!options.url) throw new TypeError('[execgate] [client] url is required, e.g. http://127.0.0.1:8080')
    this.base = options.url.replace(/\/+$/, '')
    this.fetchImpl = options.fetch ?? ((input, init) => fetch(input, init))
  }

  /** The answer of a 2xx; anything else throws an ExecgateClientError after the retries the budget allows. */
  async send(name: RouteName, init: RequestInit = {}, call: CallOptions = {}): Promise<Response> {
    const route = CLIENT_ROUTES[name]
    const query = Object.entries(init.query ?? {}).filter((entry): entry is [string, string | number] => entry[1] !== undefined)
    const url =
      this.base +
      routePath(name, init.params) +
      (query.length ? `?${new URLSearchParams(query.map(([k, v]): [string, string] => [k, String(v)])).toString()}` : '')
    const headers: Record<string, string> = {
      accept: init.accept ?? 'application/json',
      ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
      ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(init.bytes !== undefined ? { 'content-type': 'application/octet-stream' } : {}),
      ...this.options.headers,
      ...call.headers,
    }
    const body = init.json !== undefined ? JSON.stringify(init.json) : init.bytes
    const retry = { ...DEFAULT_RETRY, ...this.options.retry, ...call.retry }
    const startedAt = Date.now()
    for (let attempt = 1; ; attempt++) {
      let response: Response
      try {
        response = await this.fetchImpl(url, {
          method: route.method,
          headers,
          ...(body !== undefined ? { body: body as string } : {}),
          ...(call.signal ? { signal: call.signal } : {}),
        })
      } catch (error) {
        throw this.failure(error, call.signal, attempt)
      }
      if (response.ok) return response
      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'))
      const delay = response.status === 429 || response.status === 503 ? nextDelay(retry, attempt, startedAt, retryAfterMs) : undefined
      if (delay === undefined) throw await errorOf(response, attempt, retryAfterMs)
      await response.body?.cancel().catch(() => undefined)
      try {
        await sleep(delay, call.signal)
      } catch (error) {
        throw this.failure(error, call.signal, attempt)
      }
    }
  }

  async json<T>(name: RouteName, init: RequestInit = {}, call: CallOptions = {}): Promise<T> {
    const response = await this.send(name, init, call)
    const text = await response.text()
    if (response.status === 204 || text === '') return undefined as T
    try {
      return JSON.parse(text) as T
    } catch (error) {
      throw new ExecgateClientError({
        code: 'EXECGATE_RESPONSE_INVALID',
        message: `the server answered HTTP ${response.status} with a body that is not JSON: ${text.slice(0, 120)}`,
        status: response.status,
        attempts: 1,
        cause: error,
      })
    }
  }

  async bytes(name: RouteName, init: RequestInit = {}, call: CallOptions = {}): Promise<{ content: Uint8Array; mediaType: string }> {
    const response = await this.send(name, { accept: '*/*', ...init }, call)
    return {
      content: new Uint8Array(await response.arrayBuffer()),
      mediaType: response.headers.get('content-type') ?? 'application/octet-stream',
    }
  }

  /** The route's Server-Sent Events; leaving the loop early closes the connection. */
  async *events(name: RouteName, init: RequestInit = {}, call: CallOptions = {}): AsyncGenerator<SseMessage> {
    const response = await this.send(name, { ...init, accept: 'text/event-stream' }, call)
    if (!response.body) return
    try {
      yield* readSse(response.body)
    } catch (error) {
      throw this.failure(error, call.signal, 1)
    }
  }

  private failure(error: unknown, signal: AbortSignal | undefined, attempts: number): ExecgateClientError {
    if (signal?.aborted) {
      const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? 'aborted')
      return new ExecgateClientError({
        code: 'EXECGATE_REQUEST_CANCELLED',
        message: `the request was cancelled: ${reason}`,
        status: 0,
        attempts,
        cause: error,
      })
    }
    const detail =
      error instanceof Error ? [error.message, (error.cause as Error | undefined)?.message].filter(Boolean).join(': ') : String(error)
    return new ExecgateClientError({
      code: 'EXECGATE_SERVER_UNREACHABLE',
      message: `cannot reach the execgate server at ${this.base}: ${detail}`,
      status: 0,
      attempts,
      cause: error,
    })
  }
}

/** A non-2xx answer as an error: the server's `{ error: { code, message } }`, or EXECGATE_RESPONSE_INVALID. */
async function errorOf(response: Response, attempts: number, retryAfterMs: number | undefined): Promise<ExecgateClientError> {
  const text = await response.text().catch(() => '')
  let parsed: { error?: { code?: unknown; message?: unknown }; retryAfterMs?: unknown } | undefined
  try {
    parsed = JSON.parse(text) as typeof parsed
  } catch {
    parsed = undefined
  }
  const wait = retryAfterMs ?? (typeof parsed?.retryAfterMs === 'number' ? parsed.retryAfterMs : undefined)
  const base = { status: response.status, attempts, ...(wait !== undefined ? { retryAfterMs: wait } : {}) }
  if (typeof parsed?.error?.code === 'string' && typeof parsed.error.message === 'string')
    return new ExecgateClientError({ ...base, code: parsed.error.code, message: parsed.error.message })
  return new ExecgateClientError({
    ...base,
    code: 'EXECGATE_RESPONSE_INVALID',
    message: `the server answered HTTP ${response.status} with a body that is not execgate JSON: ${text.slice(0, 120) || '(empty)'}`,
  })
}
