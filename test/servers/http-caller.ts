/** Two tenants' API keys the HTTP tests configure (`server.apiKeys: ['acme=…', 'globex=…']`). */
export const ACME = 'acme-key-0123456789abcdef'
export const GLOBEX = 'globex-key-0123456789abcdef'

export interface CallInit {
  method?: string
  /** Sent as `Authorization: Bearer <key>`. */
  key?: string
  /** Sent as JSON. */
  body?: unknown
  /** Sent as is, `application/octet-stream`. */
  raw?: Buffer
  headers?: Record<string, string>
}

export interface CallAnswer {
  status: number
  headers: Headers
  bytes: Buffer
  text: string
  /** The body parsed, when it is a JSON object. */
  json: any
}

/**
 * A request to a server on loopback as any client sends it: POST when there is a body, GET otherwise. `baseUrl` is
 * read at each call, since the server starts after the suite's functions are defined.
 */
export function httpCaller(baseUrl: () => string): (url: string, init?: CallInit) => Promise<CallAnswer> {
  return async (url, init = {}) => {
    const response = await fetch(baseUrl() + url, {
      method: init.method ?? (init.body !== undefined || init.raw ? 'POST' : 'GET'),
      headers: {
        ...(init.key ? { authorization: `Bearer ${init.key}` } : {}),
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(init.raw ? { 'content-type': 'application/octet-stream' } : {}),
        ...init.headers,
      },
      body: init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
    })
    const bytes = Buffer.from(await response.arrayBuffer())
    const text = bytes.toString('utf8')
    return { status: response.status, headers: response.headers, bytes, text, json: text.startsWith('{') ? JSON.parse(text) : undefined }
  }
}
