import { PyodideAdapter } from '../../adapters/pyodide'
import type { ExecutionResult, Output } from '../../src/core'
import { contractContext } from '../contract/adapter-contract'

/**
 * display() in Python on pyodide: the same rich outputs as quickjs and the Python runner (docs/data.md#rich-outputs),
 * on the real adapter (CPython in WebAssembly in its own process), each sent when the code makes it and held to the
 * policy's maxOutputs and outputsBytes by the one OutputCollector.
 */
const adapter = new PyodideAdapter({ poolSize: 1 })
afterAll(() => adapter.dispose(), 30_000)

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><circle r="4"/></svg>'

function describeRun(result: ExecutionResult): string {
  return `${result.status} ${result.message ?? ''} ${JSON.stringify(result.error ?? '')} ${result.stderr.slice(-300)}`
}

test('tables from a list of dicts and from {columns, rows}, an SVG image, HTML and JSON, in order, streamed', async () => {
  const code = [
    "display([{'region': 'north', 'revenue': 10}, {'region': 'south', 'revenue': 20.5, 'note': 'new'}])",
    "display({'columns': ['a', 'b'], 'rows': [[1, 'x'], [2, None]]})",
    `display(${JSON.stringify(SVG)})`,
    "print('between')",
    "display('<b>total</b>')",
    "display({'total': 30.5, 'regions': 3})",
    '42',
  ].join('\n')
  const events: string[] = []
  const streamed: Output[] = []
  const result = await adapter.execute(
    { language: 'python', code },
    contractContext(
      { wallTimeMs: 60_000, maxOutputs: 10, outputsBytes: 1_000_000 },
      {
        onOutput: (stream, chunk) => events.push(`${stream}:${chunk.trim()}`),
        onRichOutput: (output, index) => (events.push(`output ${index}`), streamed.push(output)),
      },
    ),
  )
  expect(describeRun(result)).toMatch(/^ok /)
  expect(result.value).toBe(42)
  // Each item went out when the code made it: the print comes between the third and the fourth.
  expect(events.filter((event) => event !== 'stdout:')).toEqual([
    'output 0',
    'output 1',
    'output 2',
    'stdout:between',
    'output 3',
    'output 4',
  ])
  expect(result.outputs).toEqual(streamed)
  expect(streamed).toEqual([
    {
      kind: 'table',
      columns: ['region', 'revenue', 'note'],
      rows: [
        ['north', 10, null],
        ['south', 20.5, 'new'],
      ],
      rowCount: 2,
      bytes: expect.any(Number),
    },
    {
      kind: 'table',
      columns: ['a', 'b'],
      rows: [
        [1, 'x'],
        [2, null],
      ],
      rowCount: 2,
      bytes: expect.any(Number),
    },
    { kind: 'image', mimeType: 'image/svg+xml', data: Buffer.from(SVG).toString('base64'), bytes: Buffer.byteLength(SVG) },
    { kind: 'html', mimeType: 'text/html', data: '<b>total</b>', bytes: 12 },
    { kind: 'json', mimeType: 'application/json', data: { total: 30.5, regions: 3 }, bytes: expect.any(Number) },
  ])
}, 120_000)

test('the count and bytes are limits: past them the run is output_limit and keeps what fits', async () => {
  const code = "for i in range(5):\n    display({'i': i})"
  const counted = await adapter.execute({ language: 'python', code }, contractContext({ wallTimeMs: 60_000, maxOutputs: 2 }))
  expect(counted.status).toBe('output_limit')
  expect(counted.outputs?.map((output) => output.kind === 'json' && output.data)).toEqual([{ i: 0 }, { i: 1 }])
  expect(counted.message).toContain('3 outputs left out: a run may return 2 outputs')
  const table = "display({'columns': ['n'], 'rows': [[i] for i in range(100000)]})"
  const sized = await adapter.execute({ language: 'python', code: table }, contractContext({ wallTimeMs: 60_000, outputsBytes: 2000 }))
  expect(describeRun(sized)).toMatch(/^ok /)
  const kept = sized.outputs?.[0]
  if (kept?.kind !== 'table') throw new Error(`no table: ${JSON.stringify(sized.outputs)}`)
  expect(kept.rowCount).toBe(100000)
  expect(kept.rows.length).toBeGreaterThan(10)
  expect(kept.bytes).toBeLessThanOrEqual(2000)
}, 120_000)

test("a bad mime type is the code's error, and a policy without outputs keeps none", async () => {
  const bad = await adapter.execute({ language: 'python', code: "display('x', 'image/png')" }, contractContext({ wallTimeMs: 60_000 }))
  expect(bad.status).toBe('error')
  expect(bad.error?.message).toContain('mime must be one of')
  const none = await adapter.execute(
    { language: 'python', code: "display({'a': 1})\n1" },
    contractContext({ wallTimeMs: 60_000, maxOutputs: 0 }),
  )
  expect(none.status).toBe('output_limit')
  expect(none.outputs).toBeUndefined()
}, 120_000)
