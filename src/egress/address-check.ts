import net from 'node:net'

/**
 * Which addresses the gateway refuses after resolution: every range that is not the public internet. A name, a
 * URL host and a CONNECT target all end here as the address the gateway is about to connect to, so the spelling
 * the code used (decimal `2130706433`, octal `0177.0.0.1`, hex `0x7f.1`, `[::ffff:127.0.0.1]`) cannot matter.
 */
const FORBIDDEN_V4: readonly [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified ("this network")'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay anycast'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved (and broadcast)'],
]

const FORBIDDEN_V6: readonly [string, number, string][] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['::', 96, 'IPv4-compatible (deprecated)'],
  ['64:ff9b::', 96, 'NAT64 (reaches IPv4 through a translator)'],
  ['64:ff9b:1::', 48, 'NAT64 (local use)'],
  ['100::', 64, 'discard-only'],
  ['2001:db8::', 32, 'documentation'],
  ['2002::', 16, '6to4 (reaches IPv4 through a relay)'],
  ['fc00::', 7, 'unique local (private; AWS metadata fd00:ec2::254)'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local (deprecated)'],
  ['ff00::', 8, 'multicast'],
]

function rangeList(): { list: net.BlockList; names: Map<string, string> } {
  const list = new net.BlockList()
  const names = new Map<string, string>()
  for (const [address, prefix, name] of FORBIDDEN_V4) {
    list.addSubnet(address, prefix, 'ipv4')
    names.set(`${address}/${prefix}`, name)
  }
  for (const [address, prefix, name] of FORBIDDEN_V6) {
    list.addSubnet(address, prefix, 'ipv6')
    names.set(`${address}/${prefix}`, name)
  }
  return { list, names }
}

const FORBIDDEN = rangeList()

/** The eight 16-bit groups of an IPv6 address (a zone id dropped), or undefined when it is not one. */
function ipv6Groups(address: string): number[] | undefined {
  const bare = address.replace(/%.*$/, '')
  if (net.isIPv6(bare) === false) return undefined
  let text = bare
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted) {
    const octets = dotted[1]!.split('.').map(Number)
    text =
      text.slice(0, -dotted[1]!.length) +
      `${((octets[0]! << 8) | octets[1]!).toString(16)}:${((octets[2]! << 8) | octets[3]!).toString(16)}`
  }
  const [head, tail] = text.split('::') as [string, string | undefined]
  const parse = (part: string) => (part ? part.split(':').map((group) => parseInt(group, 16)) : [])
  const front = parse(head)
  const back = tail === undefined ? [] : parse(tail)
  const groups = tail === undefined ? front : [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back]
  return groups.length === 8 ? groups : undefined
}

/**
 * An address as the kernel would connect to it: an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, any spelling) is the
 * IPv4 address it carries. Undefined when `address` is not an IP address.
 */
export function canonicalAddress(address: string): { address: string; family: 4 | 6 } | undefined {
  if (net.isIPv4(address)) return { address, family: 4 }
  const groups = ipv6Groups(address)
  if (!groups) return undefined
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return { address: `${groups[6]! >> 8}.${groups[6]! & 255}.${groups[7]! >> 8}.${groups[7]! & 255}`, family: 4 }
  }
  return { address: groups.map((group) => group.toString(16)).join(':'), family: 6 }
}

/** The name of the forbidden range `address` falls in, or undefined when it is a public address. */
export function forbiddenRange(address: string): string | undefined {
  const canonical = canonicalAddress(address)
  if (!canonical) return 'not an IP address'
  const type = canonical.family === 4 ? 'ipv4' : 'ipv6'
  if (!FORBIDDEN.list.check(canonical.address, type)) return undefined
  // BlockList says whether, not which: find the range's name for the refusal message.
  for (const [range, name] of FORBIDDEN.names) {
    const [base, prefix] = range.split('/') as [string, string]
    const one = new net.BlockList()
    one.addSubnet(base, Number(prefix), net.isIPv4(base) ? 'ipv4' : 'ipv6')
    if (one.check(canonical.address, type)) return `${name} ${range}`
  }
  return 'forbidden range'
}

/** CIDRs an operator exempts from the check (`security.egress.allowPrivateRanges`: loopback test servers). */
export class AddressExemptions {
  private readonly list = new net.BlockList()
  readonly cidrs: readonly string[]

  constructor(cidrs: readonly string[]) {
    this.cidrs = [...cidrs]
    for (const cidr of cidrs) {
      const parsed = parseCidr(cidr)
      if (!parsed) throw new Error(`"${cidr}" is not a CIDR (e.g. 127.0.0.0/8, ::1/128)`)
      this.list.addSubnet(parsed.address, parsed.prefix, parsed.family === 4 ? 'ipv4' : 'ipv6')
    }
  }

  covers(address: string): boolean {
    const canonical = canonicalAddress(address)
    return !!canonical && this.cidrs.length > 0 && this.list.check(canonical.address, canonical.family === 4 ? 'ipv4' : 'ipv6')
  }
}

export function parseCidr(cidr: string): { address: string; prefix: number; family: 4 | 6 } | undefined {
  const match = /^([^/]+)\/(\d{1,3})$/.exec(cidr.trim())
  if (!match) return undefined
  const canonical = canonicalAddress(match[1]!)
  const prefix = Number(match[2])
  if (!canonical || prefix > (canonical.family === 4 ? 32 : 128)) return undefined
  return { address: canonical.address, prefix, family: canonical.family }
}

/** Why the gateway may not connect to `address`, or undefined when it may. */
export function addressRefusal(address: string, exemptions?: AddressExemptions): string | undefined {
  const range = forbiddenRange(address)
  if (!range || exemptions?.covers(address)) return undefined
  const canonical = canonicalAddress(address)?.address ?? address
  return `${canonical === address ? address : `${address} (${canonical})`} is in a ${range} range`
}
