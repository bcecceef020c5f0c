import { DEFAULT_POLICY, resolvePolicy } from '../../src/policy'

describe('resolvePolicy: a request may only tighten', () => {
  test('tightening applies', () => {
    const { policy } = resolvePolicy(DEFAULT_POLICY, { timeoutMs: 100, memoryMb: 32, policy: { allowedImports: ['math'], outputBytes: 1000 } })
    expect(policy).toMatchObject({ wallTimeMs: 100, memoryMb: 32, allowedImports: ['math'], outputBytes: 1000 })
  })

  test.each([
    [{ timeoutMs: 60_000 }, 'wallTimeMs'],
    [{ memoryMb: 4096 }, 'memoryMb'],
    [{ policy: { outputBytes: 10_000_000 } }, 'outputBytes'],
    [{ policy: { network: ['example.com'] } }, 'network'],
    [{ policy: { filesystem: 'sandboxed' as const } }, 'filesystem'],
    [{ policy: { allowedImports: ['math', 'os'] } }, 'allowedImports'],
    [{ policy: { hostCalls: { maxCount: 1_000_000 } } }, 'hostCalls.maxCount'],
  ])('loosening %j is refused, naming %s', (request, limit) => {
    const resolution = resolvePolicy(DEFAULT_POLICY, request)
    expect(resolution.policy).toBeUndefined()
    expect(resolution.loosening?.limit).toBe(limit)
    expect(resolution.loosening?.message).toContain(limit)
  })

  test('required limits accumulate; the caller’s stay', () => {
    const base = { ...DEFAULT_POLICY, required: ['memory' as const] }
    expect(resolvePolicy(base, { policy: { required: ['network'] } }).policy?.required).toEqual(['memory', 'network'])
  })

  test('no overrides returns the caller’s policy itself', () => {
    expect(resolvePolicy(DEFAULT_POLICY, {}).policy).toBe(DEFAULT_POLICY)
  })
})
