import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import type { EgressGrant, EgressRun } from './egress-run'
import { forwardedHeaders, refusalBody } from './proxy-words'
import { SecretScrubber, secretHeaders, type LoadedSecret } from './secrets'

/** Where a checked request goes: the run it counts against, the grant (the checked address), and TLS if re-terminated. */
export interface ForwardTarget {
  run: EgressRun
  grant: EgressGrant
  secrets: readonly LoadedSecret[]
  /** Set when the gateway re-terminated the code's TLS: the request goes on over TLS, verified against `ca`. */
  tls?: { ca: readonly string[] }
  /**
   * Kept-alive upstream connections for plain HTTP, pooled by the checked address and port (never by name, so a
   * reused connection goes where a check said it may). @default a new connection per request
   */
  agent?: http.Agent
}

/**
 * Sends one checked request upstream to the address the grant checked, with the secrets for its host, and streams
 * the answer back scrubbed; counts bytes against the run's caps, cuts it at the connection cap, and records it.
 */
export function forwardRequest(
  target: ForwardTarget,
  request: http.IncomingMessage,
  response: http.ServerResponse,
  url: URL,
  shownUrl: string,
  elapsed: () => number,
): void {
  const { run, grant, secrets } = target
  const method = request.method ?? 'GET'
  const added = secretHeaders(secrets, grant.host, grant.port)
  const headers = { ...forwardedHeaders(request.headers), host: url.host, ...added }
  // A secret's host: ask for an uncompressed body, so an upstream that echoes the request can be scrubbed.
  if (Object.keys(added).length) headers['accept-encoding'] = 'identity'
  let bytesOut = 0
  let bytesIn = 0
  let reason: string | undefined
  let status: number | undefined
  const options: https.RequestOptions = {
    host: grant.address,
    family: grant.family,
    port: grant.port,
    method,
    path: `${url.pathname}${url.search}`,
    headers,
    agent: target.tls ? false : (target.agent ?? false),
    setHost: false,
  }
  // Re-terminated TLS: the upstream is verified as any client would, by the name the code asked for.
  const upstream = target.tls
    ? https.request({ ...options, servername: net.isIP(grant.host) ? undefined : grant.host, ca: [...target.tls.ca] })
    : http.request(options)
  const cut = (why: string, code: number) => {
    reason ??= why
    upstream.destroy()
    if (!response.headersSent)
      response
        .writeHead(code, { 'content-type': 'text/plain; charset=utf-8', 'x-execgate-egress': 'cut', connection: 'close' })
        .end(refusalBody(why))
    else response.destroy()
  }
  const timer = setTimeout(
    () => cut(`the connection passed ${run.caps.maxConnectionMs} ms (security.egress.maxConnectionMs)`, 504),
    run.caps.maxConnectionMs,
  )
  const connectTimer = setTimeout(
    () => cut(`${grant.host}:${grant.port} did not accept a connection within ${run.caps.connectTimeoutMs} ms`, 504),
    run.caps.connectTimeoutMs,
  )
  upstream.once('socket', (socket) => {
    // A pooled connection is connected already: no connect to wait for.
    if (socket.connecting) socket.once('connect', () => clearTimeout(connectTimer))
    else clearTimeout(connectTimer)
  })
  request.on('data', (chunk: Buffer) => {
    bytesOut += chunk.length
    if (!run.sent(chunk.length)) cut(`the run sent more than ${run.caps.maxBytesOut} bytes (security.egress.maxBytesOut)`, 413)
  })
  request.pipe(upstream)
  upstream.on('response', (answer) => {
    status = answer.statusCode ?? 502
    response.writeHead(status, forwardedHeaders(answer.headers))
    answer.on('data', (chunk: Buffer) => {
      bytesIn += chunk.length
      if (!run.received(chunk.length)) cut(`the run received more than ${run.caps.maxBytesIn} bytes (security.egress.maxBytesIn)`, 502)
    })
    const body = secrets.length ? answer.pipe(new SecretScrubber(secrets)) : answer
    body.pipe(response)
  })
  upstream.on('error', (error) => cut(`${grant.host}:${grant.port} failed: ${error.message}`, 502))
  response.on('close', () => {
    clearTimeout(timer)
    clearTimeout(connectTimer)
    upstream.destroy()
    run.record({
      method,
      host: grant.host,
      port: grant.port,
      url: shownUrl,
      ...(status ? { status } : reason ? { status: response.statusCode } : {}),
      bytesOut,
      bytesIn,
      decision: 'allowed',
      rule: grant.rule.text,
      ...(reason ? { reason } : {}),
      durationMs: elapsed(),
    })
  })
}
