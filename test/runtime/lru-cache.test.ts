import { LruCache } from '../../src/runtime'
import { staticCheck } from '../../src/policy'
import { DEFAULT_POLICY } from '../../src/policy'

describe('LruCache', () => {
  test('computes once per key, drops the least recently used past its size, never caches oversized keys', () => {
    const cache = new LruCache<number>(2, 10)
    let computed = 0
    const get = (key: string) => cache.get(key, () => ++computed)
    expect([get('a'), get('a'), get('b')]).toEqual([1, 1, 2])
    get('a') // a is now the most recently used
    expect(get('c')).toBe(3) // b goes
    expect([get('a'), get('b')]).toEqual([1, 4])
    expect(get('x'.repeat(11))).toBe(5)
    expect(get('x'.repeat(11))).toBe(6)
    expect(cache.size).toBe(2)
  })
})

describe('static checks are cached by language, code, allow-list and filesystem access', () => {
  test('the same code under another policy is judged again; callers get copies', () => {
    const code = 'import json\nimport os\nopen("x")'
    const strict = staticCheck('python', code, { ...DEFAULT_POLICY, allowedImports: ['json'] })
    const loose = staticCheck('python', code, { ...DEFAULT_POLICY, allowedImports: ['json', 'os'], filesystem: 'read_only' })
    expect(strict.map((issue) => issue.code)).toEqual(expect.arrayContaining(['import_not_allowed']))
    expect(loose.some((issue) => issue.code === 'import_not_allowed')).toBe(false)
    expect(strict.length).toBeGreaterThan(loose.length)
    strict[0]!.message = 'changed by a caller'
    expect(staticCheck('python', code, { ...DEFAULT_POLICY, allowedImports: ['json'] })[0]!.message).not.toBe('changed by a caller')
  })
})
