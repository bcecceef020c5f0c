import { newRunId } from '../../src/execution/run-id'

describe('run ids (UUID version 7)', () => {
  it('are RFC 9562 version-7 UUIDs carrying the time they were made', () => {
    const now = Date.UTC(2026, 10, 26, 15, 0, 0, 123)
    const id = newRunId(now)
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(now)
    // Every one of the six bytes, the two above 32 bits included.
    expect(newRunId(0xfedcba987654).slice(0, 13)).toBe('fedcba98-7654')
  })

  it('sort by time, and never repeat (past the random pool refilling)', () => {
    const ids = Array.from({ length: 2000 }, (_, index) => newRunId(1_800_000_000_000 + Math.floor(index / 10)))
    expect(new Set(ids).size).toBe(ids.length)
    for (let index = 10; index < ids.length; index += 10) expect(ids[index]! > ids[index - 1]!).toBe(true)
  })
})
