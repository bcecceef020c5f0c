import http from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ExecgateError } from '../core'
import { FORWARDED_HEADER } from '../fabric/sandboxes'

/**
 * A request passed on to the node that holds what it names (a sandbox, a session: docs/sandboxes.md#many-nodes), as
 * it came: method, path, headers with the caller's API key (the owner checks it again), the body streamed or, once
 * parsed, sent again as JSON; the answer streamed back, server-sent events included.
 */

/** Marks a forwarded request, so the owner never forwards it again (a record that changed in between answers 404). */
export { FORWARDED_HEADER }

/** Keep-alive to the other nodes: a forwarded call costs a hop, not a TCP handshake. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })

export interface ForwardTarget {
  /** The owner's base URL. */
  url: string
  /** This node's id, for the loop guard. */
  from: string
  /** The body already parsed by this node (a session call's), sent as JSON; otherwise the raw body is piped. */
  json?: unknown
  /** What to answer (502, `Retry-After: 1`) when the owner cannot be reached before it answered. */
  unreachable(detail: string): ExecgateError
}

export function forwardToNode(request: FastifyRequest, reply: FastifyReply, target: ForwardTarget): void {
  reply.hijack()
  const destination = new URL(request.raw.url!, target.url)
  const headers: http.OutgoingHttpHeaders = { ...request.headers, host: destination.host, [FORWARDED_HEADER]: target.from }
  const body = target.json === undefined ? undefined : Buffer.from(JSON.stringify(target.json))
  if (body) {
    delete headers['transfer-encoding']
    headers['content-type'] = 'application/json'
    headers['content-length'] = String(body.byteLength)
  }
  const upstream = http.request(destination, { method: request.method, headers, agent }, (answer) => {
    reply.raw.writeHead(answer.statusCode ?? 502, answer.headers)
    answer.pipe(reply.raw)
  })
  upstream.on('error', (error) => {
    if (reply.raw.headersSent) {
      reply.raw.destroy(error)
      return
    }
    const refused = target.unreachable(error.message)
    reply.raw.writeHead(502, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' })
    reply.raw.end(JSON.stringify({ error: { code: refused.code, message: refused.message } }))
  })
  // The caller going away cancels the forwarded call too (an exec is then cancelled on its owner).
  reply.raw.on('close', () => {
    if (!reply.raw.writableFinished) upstream.destroy()
  })
  if (body) upstream.end(body)
  else request.raw.pipe(upstream)
}
