import { MontyAdapter } from '../../adapters/monty'
import type { ExecutionResult, Output } from '../../src/core'
import { createExecgate } from '../../src'
import { contractContext } from '../contract/adapter-contract'

/**
 * display() on monty: the same rich outputs as quickjs's and the data Python's (docs/data.md#rich-outputs), on the
 * real adapter (monty's native binding in its worker processes), held to the policy's maxOutputs and outputsBytes.
 */
const adapter = new MontyAdapter({ workers: 1 })
afterAll(() => adapter.dispose())

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><circle r="4"/></svg>'

function run(code: string, policy: Parameters<typeof contractContext>[0] = {}, extra: Parameters<typeof contractContext>[1] = {}) {
  return adapter.execute({ language: 'python', code }, contractContext(policy, extra))
}

function describeRun(result: ExecutionResult): string {
  return `${result.status} ${result.message ?? ''} ${JSON.stringify(result.error ?? '')}`
}

test('tables from a list of dicts and from columns and rows, an SVG image, HTML and JSON, in order', async () => {
  const result = await run(
    [
      "sales = [{'region': 'north', 'revenue': 10}, {'region': 'south', 'revenue': 20.5, 'note': 'new'}, {'region': 'east'}]",
      'display(sales)',
      "display({'columns': ['a', 'b'], 'rows': [[1, 'x'], [2, None]]})",
      `display(${JSON.stringify(SVG)})`,
      "display('<b>total</b>')",
      "display({'total': 30.5, 'regions': 3})",
      "display('<p>not html</p>', 'application/json')",
      "display('<g/>', mime='image/svg+xml')",
      'sum(sale.get("revenue", 0) for sale in sales)',
    ].join('\n'),
  )
  expect(describeRun(result)).toBe('ok  ""')
  expect(result.value).toBe(30.5)
  expect(result.outputs).toEqual([
    {
      kind: 'table',
      columns: ['region', 'revenue', 'note'],
      rows: [
        ['north', 10, null],
        ['south', 20.5, 'new'],
        ['east', null, null],
      ],
      rowCount: 3,
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
    { kind: 'json', mimeType: 'application/json', data: { total: 30.5, regions: 3 }, bytes: 26 },
    { kind: 'json', mimeType: 'application/json', data: '<p>not html</p>', bytes: 17 },
    { kind: 'image', mimeType: 'image/svg+xml', data: Buffer.from('<g/>').toString('base64'), bytes: 4 },
  ])
})

test('a table keeps its first rows within the caps and says how many it had', async () => {
  const code = "display([{'i': i, 'label': 'row ' + str(i)} for i in range(5000)])"
  const many = await run(code, { outputBytes: 1024 * 1024 })
  expect(describeRun(many)).toBe('ok  ""')
  const table = many.outputs![0] as Extract<Output, { kind: 'table' }>
  expect(table.rowCount).toBe(5000)
  expect(table.rows).toHaveLength(1000)
  expect(table.rows[999]).toEqual([999, 'row 999'])
  const capped = await run(code, { outputBytes: 2048 })
  const small = capped.outputs![0] as Extract<Output, { kind: 'table' }>
  expect(small.rows.length).toBeGreaterThan(10)
  expect(small.rows.length).toBeLessThan(200)
  expect(small.bytes).toBeLessThanOrEqual(2048)
})

test('items past maxOutputs or outputsBytes are left out and an ok run ends output_limit naming the limits', async () => {
  const counted = await run('for i in range(30):\n    display(i)\n7', { maxOutputs: 10 })
  expect(counted.status).toBe('output_limit')
  expect(counted.outputs!.map((output) => output.kind === 'json' && output.data)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
  expect(counted.message).toContain('20 outputs left out')
  expect(counted.message).toContain('maxOutputs, outputsBytes')
  const sized = await run("display('<b>' + 'x' * 200000 + '</b>')\ndisplay('<i>small</i>')", { outputsBytes: 64 * 1024 })
  expect(sized.status).toBe('output_limit')
  expect(sized.outputs).toEqual([{ kind: 'html', mimeType: 'text/html', data: '<i>small</i>', bytes: 12 }])
})

test('a wrong mime type or no value is a TypeError in the code, which can catch it', async () => {
  const wrong = await run("display('x', 'image/png')")
  expect(wrong.status).toBe('error')
  expect(wrong.error).toMatchObject({ type: 'TypeError', message: expect.stringContaining('mime must be one of') })
  const caught = await run('try:\n    display()\nexcept TypeError as e:\n    r = str(e)\nr')
  expect(describeRun(caught)).toBe('ok  ""')
  expect(caught.value).toContain('needs a value')
})

test('code that defines its own display keeps it: nothing is added', async () => {
  const result = await run('def display(x):\n    return x * 2\ndisplay(21)')
  expect(describeRun(result)).toBe('ok  ""')
  expect(result.value).toBe(42)
  expect(result.outputs).toBeUndefined()
})

test('each item reaches onRichOutput when the code makes it, between the text printed around it', async () => {
  const events: string[] = []
  const result = await run(
    "print('before')\ndisplay({'step': 1})\nprint('between')\ndisplay({'step': 2})",
    {},
    {
      onOutput: (stream, chunk) => void (chunk.trim() && events.push(`${stream}:${chunk.trim()}`)),
      onRichOutput: (output, index) => events.push(`output ${index}:${JSON.stringify(output.kind === 'json' && output.data)}`),
    },
  )
  expect(describeRun(result)).toBe('ok  ""')
  expect(events).toEqual(['stdout:before', 'output 0:{"step":1}', 'stdout:between', 'output 1:{"step":2}'])
})

test('through the service, Python with display() and no imports is answered by monty with its outputs', async () => {
  const execgate = await createExecgate({
    warm: false,
    overrides: { execution: { enabled: ['monty', 'quickjs'] }, readiness: { enabled: false }, log: { level: 'silent' } },
  })
  try {
    const result = await execgate.execute({ language: 'python', code: "display([{'region': 'north', 'revenue': 15}])\n1 + 1" })
    expect(result).toMatchObject({ status: 'ok', adapter: 'monty', value: 2 })
    expect(result.outputs).toEqual([
      { kind: 'table', columns: ['region', 'revenue'], rows: [['north', 15]], rowCount: 1, bytes: expect.any(Number) },
    ])
  } finally {
    await execgate.dispose()
  }
}, 60_000)
