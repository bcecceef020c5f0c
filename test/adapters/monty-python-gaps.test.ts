import { MontyAdapter } from '../../adapters/monty'
import { scanPython } from '../../src/runtime'

/** The scan facts monty's canRun reads to escalate code it would fail or answer wrongly (adapters/monty/python-gaps.ts). */
describe("monty's canRun escalates what the differential corpus found", () => {
  const monty = new MontyAdapter({ workers: 1 })
  afterAll(() => monty.dispose())
  const verdict = (code: string) => monty.canRun(code, 'python')

  test.each(
    (
      [
        ['"{} items".format(3)', /monty lacks \.format/],
        ['import math\nmath.hypot(3, 4)', /\.hypot/],
        ['def f():\n    pass\nf.__name__', /\.__name__/],
        ['callable(len)', /builtin callable/],
        ['"%d items" % 3', /printf-style/],
        ["'%s=%s' % ('a', 1)", /printf-style/],
        ['def twice(fn):\n    return fn\n@twice\ndef inc(x):\n    return x + 1\ninc(1)', /decorators/],
        ['"Straße".casefold()', /\.casefold answers differently/],
        ['frozenset([1]) == {1}', /frozenset answers differently/],
        ['amount = 1234.5\nf"${amount:,.2f}"', /format spec \(:,\.2f\)/],
        ['n = 255\nf"{n:#x} {n:_}"', /:#x, :_/],
      ] as Array<[string, RegExp]>
    ).map(([code, reason]) => [JSON.stringify(code), code, reason] as const),
  )('%s is escalated', (_title, code, reason) => {
    expect(verdict(code)).toEqual({ ok: false, reason: expect.stringMatching(reason) })
  })

  test.each(
    [
      // Named inside a string or a comment, or not after a dot / not called: not the construct.
      ['x = "use .format( here"  # .hypot\nx'],
      ['format = 3\nformat + 1'],
      ['a = 7\nb = 3\na % b'],
      ['n = 5\nf"{n} % done"'],
      ['a = [[1]]\nb = [[2]]\nlen(a) * 2  # a @ b is matrix multiplication, never a decorator'],
      ['total = sum([1.5, 2.5])\nround(total, 1)'],
      ['d = {"a": 1}\nw = 8\nf"{d[\'a\']:>{w}.2f} {d} {{a,b}} {w=} {\'x,y\'}"'],
    ].map(([code]) => [JSON.stringify(code), code!] as const),
  )('%s stays on monty', (_title, code) => {
    expect(verdict(code)).toEqual({ ok: true })
  })

  test('the scan reports attribute names once each, and printf formatting only after a string literal', () => {
    const scan = scanPython('a.b.c\na.b\n"x" % y\n')
    expect([...scan.attributes].sort()).toEqual(['b', 'c'])
    expect(scan.percentFormatting).toBe(true)
    expect(scanPython('x % y').percentFormatting).toBe(false)
  })
})
