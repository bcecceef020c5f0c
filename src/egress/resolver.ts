import dns from 'node:dns'

/**
 * How the gateway turns a name into addresses. Injected so tests can map names such as `api.example.test` to
 * 127.0.0.x without touching /etc/hosts, and can answer differently on each lookup (DNS rebinding).
 */
export interface EgressResolver {
  /** Every address of `host` (IPv4 and IPv6); rejects when the name does not resolve. */
  resolve(host: string): Promise<string[]>
}

/** The system's resolver (getaddrinfo, as every other program on the host resolves). */
export const systemResolver: EgressResolver = {
  async resolve(host) {
    const answers = await dns.promises.lookup(host, { all: true, verbatim: true })
    return answers.map((answer) => answer.address)
  },
}

/**
 * A resolver from a table, for tests and fixed deployments: each name maps to its addresses, or to a list of
 * answers given in turn (the last one repeats, or with `cycle` the first comes again) — a name that resolves to a
 * public address once and to a private one
 * next. Names not in the table go to `fallback`, or fail like an unknown name.
 */
export function tableResolver(
  table: Readonly<Record<string, string | string[] | { answers: string[][]; cycle?: boolean }>>,
  fallback?: EgressResolver,
): EgressResolver {
  const asked = new Map<string, number>()
  return {
    async resolve(host) {
      const entry = table[host.toLowerCase()]
      if (entry === undefined) {
        if (fallback) return fallback.resolve(host)
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
      }
      if (typeof entry === 'string') return [entry]
      if (Array.isArray(entry)) return [...entry]
      const turn = asked.get(host) ?? 0
      asked.set(host, turn + 1)
      return [...entry.answers[entry.cycle ? turn % entry.answers.length : Math.min(turn, entry.answers.length - 1)]!]
    },
  }
}
