import { matchHostRule, parseHostRule, parseHostRules, resolvePolicy, rulesWithin, DEFAULT_POLICY } from '../../src/policy'

describe('network rules', () => {
  test('host, wildcard, port and methods', () => {
    const rules = parseHostRules(['api.example.com', '*.example.org:8443', 'GET,HEAD data.example.net:*', '[::1]:8080', '*:9999'])
    expect(matchHostRule(rules, 'api.example.com', 443, 'POST')?.text).toBe('api.example.com')
    expect(matchHostRule(rules, 'api.example.com', 80, undefined)?.text).toBe('api.example.com')
    expect(matchHostRule(rules, 'api.example.com', 8080, 'GET')).toBeUndefined()
    expect(matchHostRule(rules, 'a.b.example.org', 8443, 'GET')?.text).toBe('*.example.org:8443')
    expect(matchHostRule(rules, 'example.org', 8443, 'GET')).toBeUndefined()
    expect(matchHostRule(rules, 'evil-example.org', 8443, 'GET')).toBeUndefined()
    expect(matchHostRule(rules, 'data.example.net', 1234, 'GET')?.text).toBe('GET,HEAD data.example.net:*')
    expect(matchHostRule(rules, 'data.example.net', 1234, 'POST')).toBeUndefined()
    expect(matchHostRule(rules, 'data.example.net', 443, undefined)).toBeUndefined()
    expect(matchHostRule(rules, '::1', 8080, 'GET')?.text).toBe('[::1]:8080')
    expect(matchHostRule(rules, 'anything.test', 9999, 'GET')?.text).toBe('*:9999')
  })

  test('bad rules say what is wrong', () => {
    expect(() => parseHostRule('http://x.com/')).toThrow(/not host\[:port\]/)
    expect(() => parseHostRule('x.com:99999')).toThrow(/not 1-65535/)
    expect(() => parseHostRule('G3T x.com')).toThrow(/methods/)
    expect(() => parseHostRule('*.')).toThrow(/wildcard/)
  })

  test("a request may only narrow its caller's rules", () => {
    expect(rulesWithin(['api.example.com:443'], ['*.example.com'])).toBe(true)
    expect(rulesWithin(['GET api.example.com'], ['api.example.com'])).toBe(true)
    expect(rulesWithin(['api.example.com'], ['GET api.example.com'])).toBe(false)
    expect(rulesWithin(['api.example.com:8080'], ['*.example.com'])).toBe(false)
    expect(rulesWithin(['*.example.com'], ['api.example.com'])).toBe(false)
    expect(rulesWithin(['*'], ['*.example.com'])).toBe(false)
    const base = { ...DEFAULT_POLICY, network: ['*.example.com'] }
    expect(resolvePolicy(base, { policy: { network: ['api.example.com'] } }).policy?.network).toEqual(['api.example.com'])
    expect(resolvePolicy(base, { policy: { network: ['evil.test'] } }).loosening?.limit).toBe('network')
  })
})
