/**
 * The hostile egress corpus: what code does to reach what it must not through the network, each case with where
 * it comes from. `{ALLOWED}` is the allowed loopback server's port (api.example.test → 127.0.0.1), `{FORBIDDEN}` an
 * internal server on 127.0.0.2 that no spelling may reach (only 127.0.0.1/32 is exempt from the address check),
 * `{HTTPS}` the allowed HTTPS server's port. The allowed server also listens on 127.0.0.1:{FORBIDDEN}, so a rebinding
 * name's first answer reaches it and its second would reach the internal one. Every case runs on every tier with
 * network (egress-corpus.test.ts).
 */
export interface EgressCase {
  id: string
  source: string
  /** URLs the code requests in turn; each must be refused unless `allowed` lists its index. */
  urls: string[]
  /** Indexes of `urls` that must succeed (the allowed server, before the attack). */
  allowed?: number[]
  /** The request's own network rules (tighter than the corpus policy `*:*`). */
  network?: string[]
  /** What the refusals must say (every refused outcome, in the record's reasons). */
  reason: RegExp
}

export const EGRESS_CASES: EgressCase[] = [
  {
    id: 'ssrf-loopback-spellings',
    source:
      'OWASP SSRF Prevention Cheat Sheet ("bypassing IP filters"); PortSwigger "SSRF with ' +
      'blacklist-based input filter"; CVE-2021-22931/CVE-2023-24329 style parser differentials',
    urls: [
      'http://127.0.0.2:{FORBIDDEN}/',
      'http://2130706434:{FORBIDDEN}/',
      'http://0x7f.0.0.2:{FORBIDDEN}/',
      'http://0177.0.0.2:{FORBIDDEN}/',
      'http://127.2:{FORBIDDEN}/',
      'http://[::ffff:127.0.0.2]:{FORBIDDEN}/',
      'http://[::ffff:7f00:2]:{FORBIDDEN}/',
      'http://0.0.0.0:{FORBIDDEN}/',
      'http://[::]:{FORBIDDEN}/',
      'http://localhost:{FORBIDDEN}/',
    ],
    reason: /loopback|unspecified|does not resolve/,
  },
  {
    id: 'ssrf-cloud-metadata',
    source:
      'AWS IMDS (169.254.169.254, fd00:ec2::254) as used in the Capital One breach (2019); ' +
      'HackTricks "Cloud SSRF"; GCP metadata.google.internal',
    urls: [
      'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
      'http://[fd00:ec2::254]/latest/meta-data/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://2852039166/',
      'http://0xa9fea9fe/',
      'http://0251.0376.0251.0376/',
      'http://169.254.169.254.nip.io.example.test/',
    ],
    reason: /link-local|unique local|does not resolve/,
  },
  {
    id: 'dns-name-to-private',
    source: 'a public name that resolves to an internal address (nip.io, localtest.me); PortSwigger "SSRF via DNS"',
    urls: ['http://internal.example.test:{FORBIDDEN}/', 'http://ten.example.test/'],
    reason: /resolves to .*(loopback|private)/,
  },
  {
    id: 'dns-rebinding',
    source: 'DNS rebinding (Dean, Felten, Wallach 1996; NCC Group Singularity); the second lookup answers an internal address',
    urls: ['http://rebind.example.test:{FORBIDDEN}/hello', 'http://rebind.example.test:{FORBIDDEN}/hello'],
    allowed: [0],
    reason: /resolves to .*loopback/,
  },
  {
    id: 'redirect-to-private',
    source:
      'open redirect to an internal address (CVE-2022-0155 follow-redirects, CVE-2021-3779 and the GitLab/Grafana SSRF redirect reports)',
    urls: [
      'http://api.example.test:{ALLOWED}/redirect?to=http%3A%2F%2F127.0.0.2%3A{FORBIDDEN}%2F',
      'http://api.example.test:{ALLOWED}/redirect?status=307&to=http%3A%2F%2F169.254.169.254%2Flatest%2F',
      'http://api.example.test:{ALLOWED}/redirect?to=http%3A%2F%2F%5B%3A%3Affff%3A127.0.0.2%5D%3A{FORBIDDEN}%2F',
    ],
    reason: /loopback|link-local/,
  },
  {
    id: 'connect-disallowed-port',
    source: 'CONNECT to an unintended port (Squid SSL_ports/Safe_ports ACLs; CWE-441 unintended proxy)',
    network: ['api.example.test:{ALLOWED}', 'api.example.test:{HTTPS}'],
    urls: ['https://api.example.test:22/', 'https://api.example.test:{FORBIDDEN}/', 'http://api.example.test:{FORBIDDEN}/'],
    reason: /no network rule allows api\.example\.test:/,
  },
]

/** Fills a case's placeholders. */
export function fill(text: string, ports: { allowed: number; forbidden: number; https: number }): string {
  return text
    .replace(/\{ALLOWED\}/g, String(ports.allowed))
    .replace(/\{FORBIDDEN\}/g, String(ports.forbidden))
    .replace(/\{HTTPS\}/g, String(ports.https))
}
