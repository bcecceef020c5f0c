import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'
import tls from 'node:tls'
import { ExecgateError } from '../core/errors'
import { EgressRun, type EgressGrant } from './egress-run'
import { scrubSecrets, secretHeaders, type LoadedSecret } from './secrets'

/** What code passes to `http_request(url, options)`. */
export interface HostFetchOptions {
  method?: string
  headers?: Record<string, string>
  body?: string
  /** How `body` is written: text sent as UTF-8, or base64 of bytes (a binary upload). @default 'utf8' */
  bodyEncoding?: 'utf8' | 'base64'
  /** How the answer's body comes back: text (decoded as UTF-8), or base64 of the exact bytes. @default 'text' */
  responseType?: 'text' | 'base64'
  /** Follow redirects (each one checked again, as a new request). @default true */
  redirect?: 'follow' | 'manual'
}

/** What `http_request` answers: the body as text (UTF-8) or base64 of its bytes, never a host object. */
export interface HostFetchResponse {
  status: number
  headers: Record<string, string>
  /** Text, or base64 of the bytes with `responseType: 'base64'` (a binary download arrives intact). */
  body: string
  /** The URL that answered, after redirects. */
  url: string
  redirected: boolean
}

const MAX_REDIRECTS = 5
const REDIRECT = new Set([301, 302, 303, 307, 308])
/** Headers code may not set: they belong to the connection, or are the gateway's to add. */
const FORBIDDEN_REQUEST_HEADERS = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'proxy-authorization',
  'proxy-connection',
  'upgrade',
  'te',
  'keep-alive',
])

export interface HostFetchContext {
  run: EgressRun
  secrets: readonly LoadedSecret[]
  /** Extra CAs to trust beside the system's (tests' self-signed servers). */
  extraCa?: readonly string[]
  signal?: AbortSignal
}

function denied(detail: string): ExecgateError {
  return new ExecgateError('EXECGATE_EGRESS_DENIED', { detail })
}

/**
 * One request of the `http_request` host function: checked by the run's rules, connected to the address that was
 * checked (a `lookup` that answers with it: the name is never resolved again, while TLS still verifies the name),
 * counted against the run's caps, recorded, and every redirect checked again as a request of its own.
 */
export async function hostFetch(rawUrl: string, options: HostFetchOptions, context: HostFetchContext): Promise<HostFetchResponse> {
  let url = parseUrl(rawUrl)
  let method = (options.method ?? 'GET').toUpperCase()
  let body = options.body === undefined ? undefined : Buffer.from(options.body, options.bodyEncoding === 'base64' ? 'base64' : 'utf8')
  let redirected = false
  for (let hop = 0; ; hop++) {
    const response = await fetchOnce(url, method, options.headers ?? {}, body, options.responseType ?? 'text', context)
    const location = response.headers['location']
    if (options.redirect === 'manual' || !REDIRECT.has(response.status) || !location) return { ...response, url: url.href, redirected }
    if (hop >= MAX_REDIRECTS) throw denied(`more than ${MAX_REDIRECTS} redirects from ${rawUrl}`)
    url = parseUrl(new URL(location, url).href)
    redirected = true
    if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
      method = 'GET'
      body = undefined
    }
  }
}

function parseUrl(text: string): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new ExecgateError('EXECGATE_HOST_CALL_ARGS', { name: 'http_request', detail: `"${text}" is not an absolute URL` })
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw denied(`${url.protocol} URLs are not allowed; only http and https`)
  if (url.username || url.password) throw denied('URLs with credentials are not allowed')
  return url
}

async function fetchOnce(
  url: URL,
  method: string,
  codeHeaders: Record<string, string>,
  payload: Buffer | undefined,
  responseType: 'text' | 'base64',
  context: HostFetchContext,
): Promise<Omit<HostFetchResponse, 'url' | 'redirected'>> {
  const { run } = context
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  const shownUrl = `${url.origin}${url.pathname}`
  const elapsed = EgressRun.clock()
  const grant = await run.authorise(method, url.hostname, port)
  if (!grant.ok) {
    run.record({
      method,
      host: url.hostname,
      port,
      url: shownUrl,
      status: grant.status,
      bytesOut: 0,
      bytesIn: 0,
      decision: 'denied',
      ...(grant.rule ? { rule: grant.rule } : {}),
      reason: grant.reason,
      durationMs: elapsed(),
    })
    throw denied(`${grant.reason}${grant.rule ? ` (rule: ${grant.rule})` : ''}`)
  }
  if (payload && !run.sent(payload.length)) {
    run.record({
      method,
      host: grant.host,
      port,
      url: shownUrl,
      bytesOut: 0,
      bytesIn: 0,
      decision: 'denied',
      rule: 'maxBytesOut',
      reason: 'request body past the byte cap',
      durationMs: elapsed(),
    })
    throw denied(`the run may send at most ${run.caps.maxBytesOut} bytes (security.egress.maxBytesOut)`)
  }
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(codeHeaders))
    if (!FORBIDDEN_REQUEST_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = String(value)
  const added = secretHeaders(context.secrets, grant.host, port)
  Object.assign(headers, added)
  if (Object.keys(added).length) headers['accept-encoding'] = 'identity'
  if (payload) headers['content-length'] = String(payload.length)
  const outcome = await send(url, grant, method, headers, payload, context).catch(
    (error: Error & { bytesIn?: number; status?: number }) => {
      run.record({
        method,
        host: grant.host,
        port,
        url: shownUrl,
        ...(error.status ? { status: error.status } : {}),
        bytesOut: payload?.length ?? 0,
        bytesIn: error.bytesIn ?? 0,
        decision: 'allowed',
        rule: grant.rule.text,
        reason: error.message,
        durationMs: elapsed(),
      })
      throw error instanceof ExecgateError
        ? error
        : new ExecgateError('EXECGATE_EGRESS_FAILED', { detail: `${method} ${shownUrl}: ${error.message}` }, { cause: error })
    },
  )
  run.record({
    method,
    host: grant.host,
    port,
    url: shownUrl,
    status: outcome.status,
    bytesOut: payload?.length ?? 0,
    bytesIn: outcome.bytesIn,
    decision: 'allowed',
    rule: grant.rule.text,
    durationMs: elapsed(),
  })
  const scrub = (text: string) => (context.secrets.length ? scrubSecrets(text, context.secrets) : text)
  const responseHeaders: Record<string, string> = {}
  for (const [name, value] of Object.entries(outcome.headers))
    if (value !== undefined) responseHeaders[name] = scrub(Array.isArray(value) ? value.join(', ') : value)
  // Secret values are ASCII: scrubbed byte for byte (latin1 maps each byte to one character), so bytes stay bytes.
  const body =
    responseType === 'base64'
      ? Buffer.from(scrub(outcome.body.toString('latin1')), 'latin1').toString('base64')
      : scrub(outcome.body.toString('utf8'))
  return { status: outcome.status, headers: responseHeaders, body }
}

function send(
  url: URL,
  grant: EgressGrant,
  method: string,
  headers: Record<string, string>,
  payload: Buffer | undefined,
  context: HostFetchContext,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer; bytesIn: number }> {
  const { run } = context
  // The connection goes to the checked address whatever the name resolves to now; TLS still checks the name.
  const lookup: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as unknown as (error: null, addresses: { address: string; family: number }[]) => void)(null, [
        { address: grant.address, family: grant.family },
      ])
    else callback(null, grant.address, grant.family)
  }
  const secure = url.protocol === 'https:'
  const requestOptions: https.RequestOptions = {
    host: grant.host,
    port: grant.port,
    method,
    path: `${url.pathname}${url.search}`,
    headers: { host: url.host, ...headers },
    lookup,
    agent: false,
    ...(secure && context.extraCa?.length ? { ca: [...tls.rootCertificates, ...context.extraCa] } : {}),
  }
  return new Promise((resolve, reject) => {
    let bytesIn = 0
    const request = (secure ? https : http).request(requestOptions)
    const fail = (error: Error & { bytesIn?: number; status?: number }) => {
      error.bytesIn = bytesIn
      request.destroy()
      reject(error)
    }
    const timer = setTimeout(
      () => fail(new Error(`no complete answer within ${run.caps.maxConnectionMs} ms (security.egress.maxConnectionMs)`)),
      run.caps.maxConnectionMs,
    )
    const onAbort = () => fail(new Error('the run ended'))
    context.signal?.addEventListener('abort', onAbort, { once: true })
    const done = () => {
      clearTimeout(timer)
      context.signal?.removeEventListener('abort', onAbort)
    }
    request.on('error', (error) => {
      done()
      fail(error)
    })
    request.on('response', (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => {
        bytesIn += chunk.length
        if (!run.received(chunk.length)) {
          done()
          fail(
            Object.assign(denied(`the response passed the run's ${run.caps.maxBytesIn}-byte cap (security.egress.maxBytesIn)`), {
              status: response.statusCode,
            }),
          )
          return
        }
        chunks.push(chunk)
      })
      response.on('end', () => {
        done()
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks), bytesIn })
      })
      response.on('error', (error) => {
        done()
        fail(error)
      })
    })
    request.end(payload)
  })
}
