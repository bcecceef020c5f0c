import { readEventStream, type ServerEvent } from './sse'

/** An API answer that is not a success, with the server's own code and message (`{ error: { code, message } }`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

// The console is served at <root>/console/: the API is <root>/v1, wherever <root> is (behind a proxy's prefix too).
const API_ROOT = new URL('../', document.baseURI)

export function apiUrl(path: string): string {
  return new URL(path.replace(/^\//, ''), API_ROOT).href
}

async function errorFrom(response: Response): Promise<ApiError> {
  const text = await response.text().catch(() => '')
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } }
    if (body.error?.message) return new ApiError(response.status, body.error.code ?? 'EXECGATE_UNKNOWN', body.error.message)
  } catch {
    // not JSON: a proxy's page or an empty body, described below
  }
  return new ApiError(
    response.status,
    `HTTP_${response.status}`,
    `the server answered ${response.status} ${response.statusText || ''}`.trim() + (text ? `: ${text.slice(0, 200)}` : ''),
  )
}

export interface RequestOptions {
  body?: unknown
  /** Bytes sent as they are (a file upload), instead of a JSON body. */
  rawBody?: Blob
  headers?: Record<string, string>
  signal?: AbortSignal
}

export interface ApiClient {
  /** Whether requests carry a key (false on an open server without keys). */
  readonly keyed: boolean
  request<T>(method: string, path: string, options?: RequestOptions): Promise<T>
  get<T>(path: string, options?: RequestOptions): Promise<T>
  post<T>(path: string, body?: unknown, options?: RequestOptions): Promise<T>
  delete<T>(path: string): Promise<T>
  /** A route's answer as bytes (an artifact, a sandbox file), with the media type the server gave it. */
  bytes(path: string, options?: RequestOptions): Promise<Blob>
  /** Opens a text/event-stream route and hands each event to `onEvent` until the server ends the stream. */
  stream(method: string, path: string, onEvent: (event: ServerEvent) => void, options?: RequestOptions): Promise<void>
}

/**
 * The console's only way to the server: the public /v1 routes with `Authorization: Bearer <key>`. A 401 anywhere
 * (the key was revoked, the server restarted with other keys) goes to `onUnauthorized`, which shows the login again.
 */
export function createApi(key: string | undefined, onUnauthorized: (error: ApiError) => void = () => undefined): ApiClient {
  const send = async (method: string, path: string, options: RequestOptions = {}, accept = 'application/json'): Promise<Response> => {
    const headers: Record<string, string> = { accept, ...options.headers }
    if (key) headers.authorization = `Bearer ${key}`
    if (options.body !== undefined) headers['content-type'] = 'application/json'
    else if (options.rawBody !== undefined) headers['content-type'] = 'application/octet-stream'
    const body = options.body !== undefined ? JSON.stringify(options.body) : options.rawBody
    let response: Response
    try {
      response = await fetch(apiUrl(path), { method, headers, signal: options.signal, ...(body !== undefined ? { body } : {}) })
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error
      throw new ApiError(0, 'NETWORK', `cannot reach the execgate server (${API_ROOT.origin}): ${(error as Error).message}`)
    }
    if (!response.ok) {
      const error = await errorFrom(response)
      if (response.status === 401) onUnauthorized(error)
      throw error
    }
    return response
  }
  const request = async <T>(method: string, path: string, options?: RequestOptions): Promise<T> => {
    const response = await send(method, path, options)
    const text = await response.text()
    return (text ? JSON.parse(text) : undefined) as T
  }
  return {
    keyed: !!key,
    request,
    get: (path, options) => request('GET', path, options),
    post: (path, body, options) => request('POST', path, { ...options, body }),
    delete: (path) => request('DELETE', path),
    async bytes(path, options) {
      return (await send('GET', path, options, '*/*')).blob()
    },
    async stream(method, path, onEvent, options) {
      const response = await send(method, path, options, 'text/event-stream')
      if (!response.body) throw new ApiError(response.status, 'EMPTY', 'the server sent no event stream')
      await readEventStream(response.body, onEvent)
    },
  }
}

/** A message for any failure: the server's own words for an API error, the exception's otherwise. */
export function describeFailure(error: unknown): string {
  if (error instanceof ApiError) return error.code.startsWith('EXECGATE_') ? `${error.message} (${error.code})` : error.message
  return error instanceof Error ? error.message : String(error)
}
