import http from 'node:http'
import type net from 'node:net'
import tls from 'node:tls'
import type { CertificateAuthority } from './certificates'
import { EgressRun, type EgressGrant } from './egress-run'
import { forwardRequest } from './forward-request'
import { refuseRequest } from './proxy-words'
import type { LoadedSecret } from './secrets'

/**
 * TLS re-termination (docs/network.md) for the hosts a secret goes to, and for hosts the run's rules allow only for
 * some methods (a blind tunnel would hide them). A CONNECT to such a host is not a blind tunnel: the gateway answers
 * the code's TLS itself with a leaf for the host from its per-server CA (which only the sandboxes trust), reads each
 * request inside, adds a secret's header where one goes, and sends the request on over a new TLS connection it
 * verifies against the host's real certificate. Every request inside is checked (its method too), counted and
 * recorded like a plain HTTP request; the answer is scrubbed of secret values.
 */
export class TlsTerminator {
  private readonly server = http.createServer()
  private readonly tunnels = new WeakMap<net.Socket, { run: EgressRun; grant: EgressGrant }>()

  constructor(
    private readonly secrets: readonly LoadedSecret[],
    private readonly authority: () => Promise<CertificateAuthority>,
    /** CAs the upstream's certificate is verified against (the system's, and a test's own). */
    private readonly upstreamCa: readonly string[],
  ) {
    this.server.on('request', (request, response) => void this.onRequest(request, response))
    this.server.on('clientError', (_error, socket) => socket.destroy())
  }

  /** Takes over a CONNECT the run was granted: answers 200, then speaks TLS to the code as `grant.host`. */
  async accept(client: net.Socket, head: Buffer, run: EgressRun, grant: EgressGrant): Promise<void> {
    const leaf = await (await this.authority()).issue(grant.host)
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
    if (head.length) client.unshift(head)
    const secure = new tls.TLSSocket(client, { isServer: true, key: leaf.keyPem, cert: leaf.certificatePem, ALPNProtocols: ['http/1.1'] })
    this.tunnels.set(secure, { run, grant })
    // The tunnel's own life is capped as a blind tunnel's is; each request inside has its cap too.
    const timer = setTimeout(() => secure.destroy(), run.caps.maxConnectionMs)
    secure.once('close', () => {
      clearTimeout(timer)
      client.destroy()
    })
    secure.on('error', () => secure.destroy())
    this.server.emit('connection', secure)
  }

  private async onRequest(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    const tunnel = this.tunnels.get(request.socket)
    const method = request.method ?? 'GET'
    const elapsed = EgressRun.clock()
    const refuse = (status: number, reason: string, rule?: string, url?: string) =>
      refuseRequest(tunnel?.run, request, response, {
        method,
        host: tunnel?.grant.host ?? '',
        port: tunnel?.grant.port ?? 0,
        status,
        reason,
        ...(rule ? { rule } : {}),
        ...(url ? { url } : {}),
        durationMs: elapsed(),
      })
    if (!tunnel) return refuse(403, 'the connection belongs to no run')
    const { run, grant } = tunnel
    if (!(request.url ?? '').startsWith('/')) return refuse(400, 'inside a tunnel a request names a path (/…), not a URL')
    const authority = grant.host.includes(':') ? `[${grant.host}]` : grant.host
    const url = new URL(`https://${authority}:${grant.port}${request.url}`)
    const shownUrl = `${url.origin}${url.pathname}`
    // Each request is checked on its own: the rule's methods now apply, and it counts against maxRequests.
    const checked = await run.authorise(method, grant.host, grant.port)
    if (!checked.ok) return refuse(checked.status, checked.reason, checked.rule, shownUrl)
    forwardRequest({ run, grant: checked, secrets: this.secrets, tls: { ca: this.upstreamCa } }, request, response, url, shownUrl, elapsed)
  }

  close(): void {
    this.server.close()
  }
}
