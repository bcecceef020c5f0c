import type http from 'node:http'
import type { EgressRecord } from '../core'

/** Headers that describe one hop, never forwarded (RFC 9110 §7.6.1), and the proxy's own. */
const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
])

export function forwardedHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value
  return out
}

/** The body of a refusal: the gateway's words, the same through every door. */
export function refusalBody(reason: string, rule?: string): string {
  return `[execgate] egress refused: ${reason}${rule ? ` (rule: ${rule})` : ''}\n`
}

/** What a refused request was and why: the line the run's record gets and the status the code sees. */
export interface RequestRefusal {
  method: string
  host: string
  port: number
  status: number
  reason: string
  rule?: string
  url?: string
  durationMs: number
}

/** Refuses a request the gateway will not forward: a `denied` line in the run's record (if it has a run) and the answer. */
export function refuseRequest(
  run: { record(entry: EgressRecord): void } | undefined,
  request: http.IncomingMessage,
  response: http.ServerResponse,
  refusal: RequestRefusal,
): void {
  const { method, host, port, status, reason, rule, url, durationMs } = refusal
  run?.record({
    method,
    host,
    port,
    ...(url ? { url } : {}),
    status,
    bytesOut: 0,
    bytesIn: 0,
    decision: 'denied',
    ...(rule ? { rule } : {}),
    reason,
    durationMs,
  })
  // The answer waits for the request's body to be read (and dropped): answered and closed while the code is still
  // sending its body, the connection is torn down under it and the code sees a broken connection (inside a TLS
  // tunnel, "EOF occurred in violation of protocol") instead of the 403 and its reason. A body that does not end
  // within REFUSAL_DRAIN_MS gets the answer anyway.
  const answer = () => {
    clearTimeout(timer)
    if (response.headersSent || response.destroyed) return
    response
      .writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'x-execgate-egress': 'denied', connection: 'close' })
      .end(refusalBody(reason, rule))
  }
  const timer = setTimeout(answer, REFUSAL_DRAIN_MS)
  request.once('end', answer).once('close', answer).resume()
  if (request.complete) answer()
}

/** How long a refusal waits for the refused request's body to be read before answering. */
const REFUSAL_DRAIN_MS = 1000
