import net from 'node:net'
import { performance } from 'node:perf_hooks'
import type { EgressRecord } from '../core'
import { matchHostRule, normaliseHost, parseHostRules, type HostRule } from '../policy/network-rules'
import { addressRefusal, canonicalAddress, type AddressExemptions } from './address-check'
import type { EgressResolver } from './resolver'

/** Per-run caps (`security.egress.*`); every connection of a run counts against them. */
export interface EgressCaps {
  /** Requests (and tunnels) per run. */
  maxRequests: number
  /** Bytes the code may receive, summed over the run. */
  maxBytesIn: number
  /** Bytes the code may send, summed over the run. */
  maxBytesOut: number
  /** Longest one connection (a request and its response, or a tunnel) may stay open, in ms. */
  maxConnectionMs: number
  /** Longest the gateway waits for an upstream to accept a connection, in ms. */
  connectTimeoutMs: number
}

/** Records kept per run; more requests are still checked and counted, only not listed. */
export const MAX_EGRESS_RECORDS = 100

/** Where a connection may go: the address checked (connect to this, never to the name again) and the rule. */
export interface EgressGrant {
  ok: true
  host: string
  port: number
  address: string
  family: 4 | 6
  rule: HostRule
  /**
   * A CONNECT allowed only because the gateway will read the requests inside (the rule names methods): the proxy
   * must re-terminate its TLS and check each request's method, never pass it on as a blind tunnel.
   */
  inspect?: true
}

export interface EgressRefusal {
  ok: false
  /** The HTTP status the proxy answers with: 403 refused by policy, 502 the name does not resolve. */
  status: number
  reason: string
  rule?: string
}

/**
 * The run's tenant's egress quotas, live: asked before every request and counted into as the run goes, so a run
 * already admitted is cut (its next request refused) once its tenant's quota runs out, by it or by the tenant's other
 * runs. Every request counts, whatever its record says (the record keeps at most MAX_EGRESS_RECORDS lines).
 */
export interface EgressQuota {
  /** Why the next request is refused (the quota is spent, naming it), or undefined while there is room. */
  refusal(): string | undefined
  countRequest(): void
  countBytes(bytes: number): void
}

export interface EgressRunOptions {
  network: readonly string[]
  caps: EgressCaps
  resolver: EgressResolver
  exemptions?: AddressExemptions
  quota?: EgressQuota
}

/**
 * One run's egress: its rules, its counters and its record. The forward proxy and the `http_request` host function
 * both ask it before every connection, so the two ways out obey one policy.
 */
export class EgressRun {
  readonly rules: readonly HostRule[]
  readonly records: EgressRecord[] = []
  private requests = 0
  private bytesIn = 0
  private bytesOut = 0
  private closed = false

  constructor(private readonly options: EgressRunOptions) {
    this.rules = parseHostRules(options.network)
  }

  get caps(): EgressCaps {
    return this.options.caps
  }

  /**
   * Checks one connection: a rule must allow the method to the host and port, the run must have requests left, and
   * every address the name resolves to must be public (or exempted). `method` undefined is a CONNECT tunnel: only a
   * rule without methods allows it blind; with `canInspect` (the gateway can re-terminate its TLS) a rule naming
   * methods allows it too, as a grant marked `inspect` whose requests are then checked one by one.
   */
  async authorise(
    method: string | undefined,
    rawHost: string,
    port: number,
    options: { canInspect?: boolean } = {},
  ): Promise<EgressGrant | EgressRefusal> {
    if (this.closed) return { ok: false, status: 403, reason: 'the run has ended' }
    const quota = this.options.quota
    const spent = quota?.refusal()
    if (spent) return { ok: false, status: 403, reason: spent, rule: 'tenant quota' }
    const answer = await this.check(method, rawHost, port, options)
    // A re-terminated CONNECT is not counted: each request inside it is, on its own.
    if (quota && !(answer.ok && answer.inspect)) quota.countRequest()
    return answer
  }

  private async check(
    method: string | undefined,
    rawHost: string,
    port: number,
    options: { canInspect?: boolean },
  ): Promise<EgressGrant | EgressRefusal> {
    const host = normaliseHost(rawHost)
    if (!host) return { ok: false, status: 400, reason: `"${rawHost}" is not a host name` }
    const bare = host.replace(/^\[|\]$/g, '')
    let rule = matchHostRule(this.rules, bare, port, method)
    // Say which part refused: the host and port, or only the method (or the blind tunnel) on an allowed host.
    const hostPortRule = rule
      ? undefined
      : this.rules.find((candidate) => matchHostRule([{ ...candidate, methods: undefined }], bare, port, undefined))
    const inspect = !rule && method === undefined && !!hostPortRule && options.canInspect === true
    if (inspect) rule = hostPortRule
    if (!rule) {
      const why = !hostPortRule
        ? `no network rule allows ${bare}:${port} (rules: ${this.rules.map((candidate) => candidate.text).join(', ') || 'none'})`
        : method === undefined
          ? `no rule allows a blind tunnel (CONNECT) to ${bare}:${port}: rule "${hostPortRule.text}" ` +
            `names methods, and the methods inside a tunnel whose TLS the gateway does not ` +
            `re-terminate cannot be seen`
          : `no rule allows ${method} to ${bare}:${port}: rule "${hostPortRule.text}" allows ${hostPortRule.methods?.join(',')}`
      return { ok: false, status: 403, reason: why, rule: 'deny by default' }
    }
    if (this.requests >= this.options.caps.maxRequests) {
      return {
        ok: false,
        status: 403,
        reason: `the run used its ${this.options.caps.maxRequests} requests (security.egress.maxRequests)`,
        rule: 'maxRequests',
      }
    }
    this.requests++
    let addresses: string[]
    const literal = canonicalAddress(bare)
    if (literal) addresses = [bare]
    else {
      try {
        addresses = await this.options.resolver.resolve(bare)
      } catch (error) {
        return { ok: false, status: 502, reason: `${bare} does not resolve (${(error as Error).message})`, rule: rule.text }
      }
      if (addresses.length === 0) return { ok: false, status: 502, reason: `${bare} has no addresses`, rule: rule.text }
    }
    // Every answer must be public: a name with one public and one private address would let the OS pick the private.
    for (const address of addresses) {
      const refusal = addressRefusal(address, this.options.exemptions)
      if (refusal) return { ok: false, status: 403, reason: literal ? refusal : `${bare} resolves to ${refusal}`, rule: 'private address' }
    }
    const chosen = canonicalAddress(addresses[0]!)!
    return { ok: true, host: bare, port, address: chosen.address, family: chosen.family, rule, ...(inspect ? { inspect } : {}) }
  }

  /** Whether any rule names methods: the gateway then re-terminates TLS to those hosts, and the sandbox must trust it. */
  get namesMethods(): boolean {
    return this.rules.some((rule) => rule.methods !== undefined)
  }

  /**
   * A granted CONNECT whose TLS the gateway re-terminates: each request inside is checked and counted on its own, so
   * the tunnel gives back the request it took (it would otherwise count twice against maxRequests).
   */
  tunnelInspected(): void {
    this.requests = Math.max(0, this.requests - 1)
  }

  /** Counts bytes the code received; false once the run is past its cap (the connection must then be cut). */
  received(bytes: number): boolean {
    this.bytesIn += bytes
    this.options.quota?.countBytes(bytes)
    return this.bytesIn <= this.options.caps.maxBytesIn
  }

  /** Counts bytes the code sent; false once past the cap. */
  sent(bytes: number): boolean {
    this.bytesOut += bytes
    this.options.quota?.countBytes(bytes)
    return this.bytesOut <= this.options.caps.maxBytesOut
  }

  get totals(): { requests: number; bytesIn: number; bytesOut: number } {
    return { requests: this.requests, bytesIn: this.bytesIn, bytesOut: this.bytesOut }
  }

  /** Adds a line to the run's record (at most MAX_EGRESS_RECORDS kept). */
  record(entry: EgressRecord): void {
    if (this.records.length < MAX_EGRESS_RECORDS) this.records.push(entry)
  }

  /** A record-keeping timer for one connection. */
  static clock(): () => number {
    const started = performance.now()
    return () => Math.round((performance.now() - started) * 1000) / 1000
  }

  /** No further connection is authorised; connections still open are the caller's to cut. */
  close(): void {
    this.closed = true
  }

  get isClosed(): boolean {
    return this.closed
  }
}

/** Opens a TCP connection to a granted address, never to the name (no second lookup: DNS rebinding). */
export function connectGranted(grant: EgressGrant, timeoutMs: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: grant.address, port: grant.port, family: grant.family })
    const timer = setTimeout(() => {
      socket.destroy()
      reject(
        Object.assign(new Error(`${grant.host}:${grant.port} did not accept a connection within ${timeoutMs} ms`), { code: 'ETIMEDOUT' }),
      )
    }, timeoutMs)
    socket.once('connect', () => {
      clearTimeout(timer)
      resolve(socket)
    })
    socket.once('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
  })
}
