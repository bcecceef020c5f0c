import { QuickJsAdapter } from '../../adapters/quickjs'
import type { ExecutionResult, Output } from '../../src/core'
import { contractContext } from '../contract/adapter-contract'

/**
 * display() on quickjs: the same rich outputs as the Python runner's (docs/data.md#rich-outputs), on the real adapter
 * (QuickJS in WebAssembly on its worker threads), held to the policy's maxOutputs and outputsBytes.
 */
const adapter = new QuickJsAdapter({ workers: 1 })
afterAll(() => adapter.dispose())

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><circle r="4"/></svg>'

function run(code: string, policy: Parameters<typeof contractContext>[0] = {}, language: 'javascript' | 'typescript' = 'javascript') {
  return adapter.execute({ language, code }, contractContext(policy))
}

function describeRun(result: ExecutionResult): string {
  return `${result.status} ${result.message ?? ''} ${JSON.stringify(result.error ?? '')}`
}

test('tables from an array of objects and from { columns, rows }, an SVG image, HTML and JSON, in order', async () => {
  const result = await run(
    [
      "display([{ region: 'north', revenue: 10 }, { region: 'south', revenue: 20.5, note: 'new' }, { region: 'east', when: new Date(0) }])",
      "display({ columns: ['a', 'b'], rows: [[1, 'x'], [2, null]] })",
      `display(${JSON.stringify(SVG)})`,
      "display('<b>total</b>')",
      'display({ total: 30.5, regions: 3 })',
      "display('a plain sentence')",
      '42',
    ].join('\n'),
  )
  expect(describeRun(result)).toBe('ok  ""')
  expect(result.value).toBe(42)
  const outputs = result.outputs!
  expect(outputs.map((output) => output.kind)).toEqual(['table', 'table', 'image', 'html', 'json', 'json'])
  expect(outputs[0]).toEqual({
    kind: 'table',
    columns: ['region', 'revenue', 'note', 'when'],
    rows: [
      ['north', 10, null, null],
      ['south', 20.5, 'new', null],
      ['east', null, null, '1970-01-01T00:00:00.000Z'],
    ],
    rowCount: 3,
    bytes: expect.any(Number),
  })
  expect(outputs[1]).toMatchObject({
    columns: ['a', 'b'],
    rows: [
      [1, 'x'],
      [2, null],
    ],
    rowCount: 2,
  })
  const image = outputs[2]!
  expect(image).toMatchObject({ kind: 'image', mimeType: 'image/svg+xml', bytes: Buffer.byteLength(SVG) })
  expect(image.kind === 'image' && Buffer.from(image.data, 'base64').toString('utf8')).toBe(SVG)
  expect(outputs[3]).toEqual({ kind: 'html', mimeType: 'text/html', data: '<b>total</b>', bytes: 12 })
  expect(outputs[4]).toEqual({ kind: 'json', mimeType: 'application/json', data: { total: 30.5, regions: 3 }, bytes: 26 })
  expect(outputs[5]).toMatchObject({ kind: 'json', data: 'a plain sentence' })
})

test('TypeScript gets display() too, and an explicit MIME type decides the kind', async () => {
  const result = await run(
    [
      'interface Sale { region: string; units: number }',
      "const sales: Sale[] = [{ region: 'north', units: 3 }]",
      'display(sales)',
      "display('<p>not html</p>', 'application/json')",
      "display('<g/>', 'image/svg+xml')",
    ].join('\n'),
    {},
    'typescript',
  )
  expect(describeRun(result)).toBe('ok  ""')
  expect(result.outputs).toEqual([
    { kind: 'table', columns: ['region', 'units'], rows: [['north', 3]], rowCount: 1, bytes: expect.any(Number) },
    { kind: 'json', mimeType: 'application/json', data: '<p>not html</p>', bytes: 17 },
    { kind: 'image', mimeType: 'image/svg+xml', data: Buffer.from('<g/>').toString('base64'), bytes: 4 },
  ])
})

test('a table keeps its first rows within the caps and says how many it had', async () => {
  const many = await run("display(Array.from({ length: 5000 }, (_, i) => ({ i, label: 'row ' + i })))", { outputBytes: 1024 * 1024 })
  expect(describeRun(many)).toBe('ok  ""')
  const table = many.outputs![0] as Extract<Output, { kind: 'table' }>
  expect(table.rowCount).toBe(5000)
  expect(table.rows).toHaveLength(1000)
  expect(table.rows[999]).toEqual([999, 'row 999'])
  // The output cap holds a table's rows as it does the Python runner's.
  const capped = await run("display(Array.from({ length: 5000 }, (_, i) => ({ i, label: 'row ' + i })))", { outputBytes: 2048 })
  const small = capped.outputs![0] as Extract<Output, { kind: 'table' }>
  expect(small.rows.length).toBeGreaterThan(10)
  expect(small.rows.length).toBeLessThan(200)
  expect(small.bytes).toBeLessThanOrEqual(2048)
})

test('items past maxOutputs or outputsBytes are left out and an ok run ends output_limit naming the limits', async () => {
  const counted = await run('for (let i = 0; i < 30; i++) display(i)\n7', { maxOutputs: 10 })
  expect(counted.status).toBe('output_limit')
  expect(counted.outputs!.map((output) => output.kind === 'json' && output.data)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
  expect(counted.message).toContain('20 outputs left out')
  expect(counted.message).toContain('maxOutputs, outputsBytes')
  // A string far over the bytes never leaves the VM; the smaller one after it still fits.
  const sized = await run("display('<b>' + 'x'.repeat(20e6) + '</b>')\ndisplay('<i>small</i>')", { outputsBytes: 64 * 1024, memoryMb: 128 })
  expect(sized.status).toBe('output_limit')
  expect(sized.outputs).toEqual([{ kind: 'html', mimeType: 'text/html', data: '<i>small</i>', bytes: 12 }])
})

test('display is the only name added: its natives stay hidden, and replaced built-ins change nothing', async () => {
  const result = await run(
    [
      'const names = Object.getOwnPropertyNames(globalThis).filter((name) => /emit|room|execgate/i.test(name))',
      "JSON.stringify = () => 'forged'",
      'Array.isArray = () => false',
      'display([{ a: 1 }])',
      'names',
    ].join('\n'),
  )
  expect(describeRun(result)).toBe('ok  ""')
  expect(result.value).toEqual([])
  expect(result.outputs).toEqual([{ kind: 'table', columns: ['a'], rows: [[1]], rowCount: 1, bytes: expect.any(Number) }])
})

test('a value with no JSON form is a TypeError in the code; a hostile getter meets the deadline', async () => {
  const fn = await run('display(() => 1)')
  expect(fn.status).toBe('error')
  expect(fn.error).toMatchObject({ type: 'TypeError', message: expect.stringContaining('no JSON form') })
  const looping = await run('display([{ get a() { for (;;) {} } }])', { wallTimeMs: 300 })
  expect(looping.status).toBe('timeout')
})

test('each item reaches onRichOutput when the code makes it, between the text written around it', async () => {
  const events: string[] = []
  const result = await adapter.execute(
    { language: 'javascript', code: "console.log('before')\ndisplay({ step: 1 })\nconsole.log('between')\ndisplay({ step: 2 })" },
    contractContext(
      {},
      {
        onOutput: (stream, chunk) => events.push(`${stream}:${chunk.trim()}`),
        onRichOutput: (output, index) => events.push(`output ${index}:${JSON.stringify(output.kind === 'json' && output.data)}`),
      },
    ),
  )
  expect(describeRun(result)).toBe('ok  ""')
  expect(events).toEqual(['stdout:before', 'output 0:{"step":1}', 'stdout:between', 'output 1:{"step":2}'])
  expect(result.outputs).toHaveLength(2)
})
