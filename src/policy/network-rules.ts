/**
 * The policy's network rules: `[METHOD[,METHOD…] ]host[:port]`. A host is a name (`api.example.com`), a wildcard
 * for its subdomains (`*.example.com`: `a.example.com` and `a.b.example.com`, not `example.com` itself), `*` for any
 * host, or an IP literal (`127.0.0.1`, `[::1]`). The port is a number or `*`; without one a rule allows the web's
 * ports, 80 and 443. Without methods a rule allows every method. Anything no rule allows is denied.
 */
export interface HostRule {
  /** The rule as written, for records and refusal messages. */
  readonly text: string
  /** Lower-case host, or `*.suffix`, or `*`. */
  readonly host: string
  /** Allowed ports; undefined means any. */
  readonly ports?: readonly number[]
  /** Upper-case methods; undefined means any. */
  readonly methods?: readonly string[]
}

const DEFAULT_PORTS = [80, 443] as const
const METHOD = /^[A-Z]+$/
const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/

/** A host name or IP literal as a URL would have it: lower-case, IPv6 in brackets, numeric forms normalised. */
export function normaliseHost(host: string): string | undefined {
  if (!host || /[\s/?#@\\]/.test(host)) return undefined
  try {
    const url = new URL(`http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}/`)
    return url.hostname || undefined
  } catch {
    return undefined
  }
}

/** Parses one rule; throws with what is wrong. */
export function parseHostRule(text: string): HostRule {
  const trimmed = text.trim()
  const space = trimmed.lastIndexOf(' ')
  const methodPart = space > 0 ? trimmed.slice(0, space).trim() : undefined
  const target = space > 0 ? trimmed.slice(space + 1) : trimmed
  const methods = methodPart?.split(',').map((method) => method.trim().toUpperCase())
  if (methods && !methods.every((method) => METHOD.test(method)))
    throw new Error(`network rule "${text}": methods must be words like GET,POST`)
  const match = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}|\*))?$/.exec(target)
  if (!match) throw new Error(`network rule "${text}" is not host[:port] (e.g. api.example.com, *.example.com:443, [::1]:8080)`)
  const rawHost = match[1]!.toLowerCase()
  const port = match[2]
  let host: string
  if (rawHost === '*') host = '*'
  else if (rawHost.startsWith('*.')) {
    const suffix = rawHost.slice(2)
    if (!suffix.split('.').every((label) => LABEL.test(label)))
      throw new Error(`network rule "${text}": "${rawHost}" is not a wildcard of a domain`)
    host = `*.${suffix}`
  } else {
    const normalised = normaliseHost(rawHost)
    if (!normalised || normalised.includes('*')) throw new Error(`network rule "${text}": "${rawHost}" is not a host name`)
    host = normalised.replace(/^\[|\]$/g, '')
  }
  let ports: number[] | undefined = [...DEFAULT_PORTS]
  if (port === '*') ports = undefined
  else if (port !== undefined) {
    const value = Number(port)
    if (value < 1 || value > 65535) throw new Error(`network rule "${text}": port ${port} is not 1-65535`)
    ports = [value]
  }
  return { text: trimmed, host, ...(ports ? { ports } : {}), ...(methods ? { methods } : {}) }
}

export function parseHostRules(rules: readonly string[]): HostRule[] {
  return rules.map(parseHostRule)
}

function hostMatches(pattern: string, host: string): boolean {
  if (pattern === '*') return true
  if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1
  return pattern === host
}

/**
 * The first rule allowing `method` to `host:port` (host already normalised). `method` undefined is a tunnel
 * (CONNECT) whose requests the gateway cannot see: only a rule without methods allows it.
 */
export function matchHostRule(rules: readonly HostRule[], host: string, port: number, method: string | undefined): HostRule | undefined {
  return rules.find(
    (rule) =>
      hostMatches(rule.host, host) &&
      (!rule.ports || rule.ports.includes(port)) &&
      (method === undefined ? !rule.methods : !rule.methods || rule.methods.includes(method.toUpperCase())),
  )
}

/** Whether everything `inner` allows, `outer` allows too: a request's rules may only tighten its caller's. */
export function ruleWithin(inner: HostRule, outer: HostRule): boolean {
  const hostCovered =
    outer.host === '*' ||
    (outer.host.startsWith('*.')
      ? inner.host !== '*' && inner.host.endsWith(outer.host.slice(1)) && inner.host.length > outer.host.length - 1
      : inner.host === outer.host)
  const portsCovered = !outer.ports || (!!inner.ports && inner.ports.every((port) => outer.ports!.includes(port)))
  const methodsCovered = !outer.methods || (!!inner.methods && inner.methods.every((method) => outer.methods!.includes(method)))
  return hostCovered && portsCovered && methodsCovered
}

/** Whether each of `requested` is within one of `allowed` (rules that do not parse are never within). */
export function rulesWithin(requested: readonly string[], allowed: readonly string[]): boolean {
  try {
    const outer = parseHostRules(allowed)
    return parseHostRules(requested).every((rule) => outer.some((candidate) => ruleWithin(rule, candidate)))
  } catch {
    return false
  }
}
