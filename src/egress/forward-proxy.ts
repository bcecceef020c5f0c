import http from 'node:http'
import type net from 'node:net'
import { connectGranted, EgressRun } from './egress-run'
import { forwardRequest } from './forward-request'
import { refusalBody, refuseRequest } from './proxy-words'
import { hasSecretFor, type LoadedSecret } from './secrets'
import type { TlsTerminator } from './tls-termination'

/** `host:port` of a CONNECT line (`[::1]:443` for IPv6), or undefined. */
function parseAuthority(authority: string | undefined): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority ?? '')
  if (!match) return undefined
  const port = Number(match[2])
  return port >= 1 && port <= 65535 ? { host: match[1]!, port } : undefined
}

/**
 * The gateway's forward proxy: one HTTP server for every run, fed connections by each run's own listener, so a
 * connection's run is known from the socket it arrived on (no credentials to steal or guess). Plain HTTP requests in
 * absolute form are checked, forwarded to the checked address, counted and recorded; CONNECT opens a checked tunnel.
 */
export class ForwardProxy {
  private readonly server = http.createServer()
  private readonly runs = new WeakMap<net.Socket, EgressRun>()
  /**
   * Upstream connections kept alive between plain HTTP requests (a new TCP connection per request was most of the
   * proxy path's overhead), keyed by the checked address and port; idle ones close after a few seconds.
   */
  private readonly upstreams = new http.Agent({ keepAlive: true, keepAliveMsecs: 1000, maxSockets: 256, maxFreeSockets: 32, timeout: 5000 })

  constructor(
    private readonly secrets: readonly LoadedSecret[],
    /**
     * Takes over CONNECTs to the hosts a secret goes to and to hosts allowed only by rules naming methods
     * (tls-termination.ts); without it such tunnels are refused.
     */
    private readonly terminator?: TlsTerminator,
  ) {
    this.server.on('request', (request, response) => void this.onRequest(request, response))
    this.server.on('connect', (request, socket, head) => void this.onConnect(request, socket as net.Socket, head))
    // A client that sends garbage gets a 400 and the socket closed, never a crash.
    this.server.on('clientError', (_error, socket) => socket.destroy())
  }

  /** Hands a connection that arrived on `run`'s listener to the proxy. */
  accept(socket: net.Socket, run: EgressRun): void {
    this.runs.set(socket, run)
    this.server.emit('connection', socket)
  }

  private async onRequest(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const run = this.runs.get(request.socket)
    const method = request.method ?? 'GET'
    const elapsed = EgressRun.clock()
    const refuse = (status: number, host: string, port: number, reason: string, rule?: string, url?: string) =>
      refuseRequest(run, request, response, {
        method,
        host,
        port,
        status,
        reason,
        ...(rule ? { rule } : {}),
        ...(url ? { url } : {}),
        durationMs: elapsed(),
      })
    if (!run) return refuse(403, '', 0, 'the connection belongs to no run')
    let url: URL
    try {
      url = new URL(request.url ?? '')
    } catch {
      return refuse(400, '', 0, 'a forward proxy takes absolute URLs (http://host/path); use CONNECT for HTTPS')
    }
    if (url.protocol !== 'http:') return refuse(400, url.hostname, 0, `${url.protocol} is not proxied as a plain request; use CONNECT`)
    const port = Number(url.port || 80)
    const shownUrl = `${url.origin}${url.pathname}`
    const grant = await run.authorise(method, url.hostname, port)
    if (!grant.ok) return refuse(grant.status, url.hostname, port, grant.reason, grant.rule, shownUrl)
    forwardRequest({ run, grant, secrets: this.secrets, agent: this.upstreams }, request, response, url, shownUrl, elapsed)
  }

  private async onConnect(request: http.IncomingMessage, client: net.Socket, head: Buffer): Promise<void> {
    const run = this.runs.get(client)
    const elapsed = EgressRun.clock()
    const target = parseAuthority(request.url)
    const refuse = (status: number, reason: string, rule?: string) => {
      run?.record({
        method: 'CONNECT',
        host: target?.host ?? String(request.url),
        port: target?.port ?? 0,
        status,
        bytesOut: 0,
        bytesIn: 0,
        decision: 'denied',
        ...(rule ? { rule } : {}),
        reason,
        durationMs: elapsed(),
      })
      const body = refusalBody(reason, rule)
      client.end(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\ncontent-type: text/plain; ` +
          `charset=utf-8\r\nx-execgate-egress: denied\r\ncontent-length: ` +
          `${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      )
    }
    if (!run) return refuse(403, 'the connection belongs to no run')
    if (!target) return refuse(400, `CONNECT needs host:port, not "${request.url}"`)
    const grant = await run.authorise(undefined, target.host, target.port, { canInspect: !!this.terminator })
    if (!grant.ok) return refuse(grant.status, grant.reason, grant.rule)
    if (this.terminator && (grant.inspect || hasSecretFor(this.secrets, grant.host, grant.port))) {
      // Its requests are checked (methods too), counted and recorded one by one, with their URLs, by the terminator.
      run.tunnelInspected()
      return this.terminator
        .accept(client, head, run, grant)
        .catch((error: Error) => refuse(502, `TLS re-termination failed: ${error.message}`))
    }
    let upstream: net.Socket
    try {
      upstream = await connectGranted(grant, run.caps.connectTimeoutMs)
    } catch (error) {
      const timedOut = (error as NodeJS.ErrnoException).code === 'ETIMEDOUT'
      return refuse(timedOut ? 504 : 502, (error as Error).message, grant.rule.text)
    }
    let bytesOut = head.length
    let bytesIn = 0
    let reason: string | undefined
    const end = (why?: string) => {
      reason ??= why
      upstream.destroy()
      client.destroy()
    }
    const timer = setTimeout(
      () => end(`the tunnel passed ${run.caps.maxConnectionMs} ms (security.egress.maxConnectionMs)`),
      run.caps.maxConnectionMs,
    )
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    if (head.length && !run.sent(head.length)) return end(`the run sent more than ${run.caps.maxBytesOut} bytes`)
    if (head.length) upstream.write(head)
    client.on('data', (chunk: Buffer) => {
      bytesOut += chunk.length
      if (!run.sent(chunk.length)) end(`the run sent more than ${run.caps.maxBytesOut} bytes (security.egress.maxBytesOut)`)
    })
    upstream.on('data', (chunk: Buffer) => {
      bytesIn += chunk.length
      if (!run.received(chunk.length)) end(`the run received more than ${run.caps.maxBytesIn} bytes (security.egress.maxBytesIn)`)
    })
    client.pipe(upstream)
    upstream.pipe(client)
    let recorded = false
    const finish = () => {
      if (recorded) return
      recorded = true
      clearTimeout(timer)
      end()
      run.record({
        method: 'CONNECT',
        host: grant.host,
        port: grant.port,
        status: 200,
        bytesOut,
        bytesIn,
        decision: 'allowed',
        rule: grant.rule.text,
        ...(reason ? { reason } : {}),
        durationMs: elapsed(),
      })
    }
    client.on('close', finish)
    upstream.on('close', finish)
    client.on('error', () => end())
    upstream.on('error', (error) => end(`${grant.host}:${grant.port} failed: ${error.message}`))
  }

  close(): void {
    this.server.close()
    this.upstreams.destroy()
    this.terminator?.close()
  }
}
