import type { SecurityPolicy } from '../../src/core'
import { DEFAULT_POLICY, resolvePolicy } from '../../src/policy'
import { LOOSENABLE_FIELDS, loosenings } from './loosenings'

describe('resolvePolicy: a request may only tighten', () => {
  test('tightening applies', () => {
    const { policy } = resolvePolicy(DEFAULT_POLICY, {
      timeoutMs: 100,
      memoryMb: 32,
      policy: { allowedImports: ['math'], outputBytes: 1000 },
    })
    expect(policy).toMatchObject({ wallTimeMs: 100, memoryMb: 32, allowedImports: ['math'], outputBytes: 1000 })
  })

  test.each(loosenings(DEFAULT_POLICY).map((item) => [item.label, item.request, item.limit] as const))(
    'loosening %s (%j) is refused, naming %s',
    (_label, request, limit) => {
      const resolution = resolvePolicy(DEFAULT_POLICY, request)
      expect(resolution.policy).toBeUndefined()
      expect(resolution.loosening?.limit).toBe(limit)
      expect(resolution.loosening?.message).toContain(limit)
    },
  )

  test('the loosening table covers every field of the policy a request can loosen, and every limit it names', () => {
    const policy: SecurityPolicy = DEFAULT_POLICY
    // A new field in SecurityPolicy must be added to LOOSENABLE_FIELDS (or to the fields that cannot loosen) here.
    expect(
      Object.keys(policy)
        .filter((key) => key !== 'required')
        .sort(),
    ).toEqual([...LOOSENABLE_FIELDS].sort())
    const named = new Set(loosenings({ ...DEFAULT_POLICY, filesystem: 'none' }).map((item) => item.limit.split('.')[0]))
    expect([...named].sort()).toEqual([...LOOSENABLE_FIELDS].sort())
  })

  test('at its limit, each value of the table is accepted: the refusal is for more, not for naming the limit', () => {
    for (const item of loosenings(DEFAULT_POLICY)) {
      if (item.limit === 'network' || item.limit === 'filesystem' || item.limit === 'allowedImports') continue
      const atLimit = JSON.parse(JSON.stringify(item.request).replace(/(\d+)(?=[,}])/g, (digits) => String(Number(digits) - 1)))
      expect({ label: item.label, refused: resolvePolicy(DEFAULT_POLICY, atLimit).loosening?.limit }).toEqual({
        label: item.label,
        refused: undefined,
      })
    }
  })

  test('required limits accumulate; the caller’s stay', () => {
    const base = { ...DEFAULT_POLICY, required: ['memory' as const] }
    expect(resolvePolicy(base, { policy: { required: ['network'] } }).policy?.required).toEqual(['memory', 'network'])
  })

  test('no overrides returns the caller’s policy itself', () => {
    expect(resolvePolicy(DEFAULT_POLICY, {}).policy).toBe(DEFAULT_POLICY)
  })
})
