import { AddressExemptions, addressRefusal, canonicalAddress, forbiddenRange } from '../../src/egress'
import { normaliseHost } from '../../src/policy'

/** Every spelling of a forbidden address is refused once it is an address; public ones pass. */
describe('address check', () => {
  test.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['169.254.169.254', 'link-local (cloud metadata)'],
    ['::ffff:169.254.169.254', 'link-local (cloud metadata)'],
    ['::ffff:a9fe:a9fe', 'link-local (cloud metadata)'],
    ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
    ['fd00:ec2::254', 'unique local'],
    ['fe80::1%eth0', 'link-local'],
    ['10.0.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['224.0.0.251', 'multicast'],
    ['ff02::1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['64:ff9b::7f00:1', 'NAT64'],
    ['::127.0.0.1', 'IPv4-compatible'],
  ])('%s is refused (%s)', (address, name) => {
    expect(forbiddenRange(address)).toContain(name)
    expect(addressRefusal(address)).toContain(address)
  })

  test.each(['93.184.215.14', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('%s is public', (address) => {
    expect(forbiddenRange(address)).toBeUndefined()
  })

  test.each([
    ['2130706433', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['0251.0376.0251.0376', '169.254.169.254'],
    ['2852039166', '169.254.169.254'],
    ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]'],
    ['LOCALHOST', 'localhost'],
  ])('the host spelling %s is read as %s, then checked', (spelling, normal) => {
    const host = normaliseHost(spelling)
    expect(host).toBe(normal)
    const bare = host!.replace(/^\[|\]$/g, '')
    if (canonicalAddress(bare)) expect(forbiddenRange(bare)).toBeDefined()
  })

  test('allowPrivateRanges exempts only its CIDRs, in any spelling of the address', () => {
    const exempt = new AddressExemptions(['127.0.0.0/8'])
    expect(addressRefusal('127.0.0.5', exempt)).toBeUndefined()
    expect(addressRefusal('::ffff:127.0.0.5', exempt)).toBeUndefined()
    expect(addressRefusal('169.254.169.254', exempt)).toContain('link-local')
    expect(addressRefusal('::1', exempt)).toContain('loopback')
    expect(() => new AddressExemptions(['127.0.0.0'])).toThrow(/not a CIDR/)
  })
})
