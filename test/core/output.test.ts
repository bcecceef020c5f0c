import { OutputCapture, truncateOutput, truncationMarker, valueBytes } from '../../src/core'

describe('output capture', () => {
  test('keeps everything under the cap', () => {
    const capture = new OutputCapture(100)
    expect(capture.write('stdout', 'hello\n')).toBe(true)
    capture.write('stderr', 'warn\n')
    expect(capture.finish()).toEqual({ stdout: 'hello\n', stderr: 'warn\n', truncated: false, stdoutBytes: 6, stderrBytes: 5 })
  })

  test('keeps the head and the tail with a marker once over the cap', () => {
    const capture = new OutputCapture(100)
    for (let i = 0; i < 1000; i++) capture.write('stdout', `line ${i}\n`)
    const out = capture.finish()
    expect(out.truncated).toBe(true)
    expect(out.stdout.startsWith('line 0\n')).toBe(true)
    expect(out.stdout.endsWith('line 999\n')).toBe(true)
    expect(out.stdout).toMatch(/…\[execgate: \d+ bytes omitted\]…/)
    const kept = Buffer.byteLength(out.stdout) - Buffer.byteLength(truncationMarker(Number(out.stdout.match(/(\d+) bytes omitted/)![1])))
    expect(kept).toBeLessThanOrEqual(100)
    expect(out.stdoutBytes).toBe(Array.from({ length: 1000 }, (_, i) => `line ${i}\n`).join('').length)
  })

  test('write returns false once the cap is passed, so adapters can stop the run', () => {
    const capture = new OutputCapture(10)
    expect(capture.write('stdout', '12345')).toBe(true)
    expect(capture.write('stdout', '123456')).toBe(false)
    expect(capture.exceeded).toBe(true)
  })

  test('never splits a UTF-8 character', () => {
    const out = truncateOutput('é'.repeat(100), '', 21)
    expect(out.stdout).not.toContain('\uFFFD')
    expect(out.truncated).toBe(true)
  })

  test('one huge write keeps its head and tail without holding it all', () => {
    const capture = new OutputCapture(1000)
    capture.write('stdout', 'H' + 'x'.repeat(10_000_000) + 'T')
    const out = capture.finish()
    expect(out.stdout.startsWith('H')).toBe(true)
    expect(out.stdout.endsWith('T')).toBe(true)
    expect(out.stdoutBytes).toBe(10_000_002)
  })

  test('shares the cap between stdout, stderr and the value', () => {
    const out = truncateOutput('o'.repeat(1000), 'e'.repeat(1000), 600, 200)
    expect(out.truncated).toBe(true)
    const visible = (text: string) => text.replace(/\n…\[execgate: \d+ bytes omitted\]…\n/, '').length
    expect(visible(out.stdout) + visible(out.stderr)).toBeLessThanOrEqual(400)
    expect(visible(out.stdout)).toBeGreaterThan(0)
    expect(visible(out.stderr)).toBeGreaterThan(0)
  })

  test('forwards chunks to a streaming listener until the cap', () => {
    const seen: string[] = []
    const capture = new OutputCapture(10, (_stream, chunk) => seen.push(chunk))
    capture.write('stdout', 'abc')
    capture.write('stdout', 'defghijkl')
    capture.write('stdout', 'more')
    expect(seen).toEqual(['abc', 'defghijkl'])
  })
})

describe('valueBytes', () => {
  test("counts a value's JSON bytes, the plain values without JSON.stringify alike", () => {
    const values: unknown[] = [0, -0, 2, -17.25, 1e21, 1e-7, 2 ** 53, NaN, Infinity, -Infinity, true, false, null, 'é', [1, 'a'], { a: 1 }]
    for (const value of values) expect([value, valueBytes(value)]).toEqual([value, Buffer.byteLength(JSON.stringify(value))])
    expect(valueBytes(undefined)).toBe(0)
  })
})
