import type http from 'node:http'

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
