import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createExecgate, type Execgate } from '../../src'
import { ExecgateClient, type ExecutionEvent } from '../../src/client'
import type { ExecutionResult, Output } from '../../src/core'
import { serve, type RunningServer } from '../../src/server/serve'
import { ACME, httpCaller } from '../servers/http-caller'

/**
 * Rich outputs on the server's surfaces: the JSON answer, the SSE stream (an `output` event per item, before the
 * result) read by the real client, and MCP's `execute_code` read by the MCP SDK's own client, which gets each chart
 * as an image block. A real server on loopback, real Python with the data stack on the process tier, and JavaScript's
 * display() on quickjs, whose items are streamed as the code makes them.
 */
const CHART = [
  'import pandas as pd',
  'import matplotlib.pyplot as plt',
  "sales = pd.DataFrame({'region': ['north', 'south', 'north'], 'revenue': [10.0, 20.0, 5.0]})",
  "sales.groupby('region').revenue.sum().plot(kind='bar')",
  "sales.groupby('region').revenue.sum()",
].join('\n')
const PNG_MAGIC = '\x89PNG\r\n\x1a\n'

let execgate: Execgate
let server: RunningServer
beforeAll(async () => {
  execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['process', 'quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      server: { apiKeys: [`acme=${ACME}`], tenants: { acme: { profile: 'data' } } },
    },
  })
  server = await serve(execgate, { port: 0 }, false)
}, 120_000)
afterAll(async () => {
  await server?.shutdown()
  await execgate?.dispose()
}, 30_000)

const call = httpCaller(() => server.url)

function expectChartAndTable(outputs: Output[] | undefined, context: string): void {
  expect({ kinds: outputs?.map((output) => output.kind), context }).toEqual({ kinds: ['table', 'image'], context })
  expect(outputs![0]).toMatchObject({
    columns: ['region', 'revenue'],
    rows: [
      ['north', 15],
      ['south', 20],
    ],
    rowCount: 2,
  })
  const image = outputs![1]!
  expect(image.kind === 'image' && Buffer.from(image.data, 'base64').subarray(0, 8).toString('latin1')).toBe(PNG_MAGIC)
}

test('POST /v1/executions answers the outputs in its JSON', async () => {
  const answer = await call('/v1/executions', { key: ACME, body: { language: 'python', code: CHART } })
  expect(answer.status).toBe(200)
  const result = answer.json as ExecutionResult
  expectChartAndTable(result.outputs, `${result.status} ${result.message ?? ''} ${result.stderr}`)
}, 120_000)

test('the SSE stream sends an output event per item before the result, as the client reads it', async () => {
  const client = new ExecgateClient({ url: server.url, apiKey: ACME })
  const events: ExecutionEvent[] = []
  for await (const event of client.stream({ language: 'python', code: `print('summing')\n${CHART}` })) events.push(event)
  expect(events.filter((event) => event.type !== 'stdout').map((event) => event.type)).toEqual(['output', 'output', 'result'])
  expect(events[0]!.type).toBe('stdout')
  const streamed = events.flatMap((event) => (event.type === 'output' ? [event.output] : []))
  expect(events.flatMap((event) => (event.type === 'output' ? [event.index] : []))).toEqual([0, 1])
  expectChartAndTable(streamed, 'streamed')
  const last = events.at(-1)!
  expect(last.type === 'result' && last.result.outputs).toEqual(streamed)
}, 120_000)

test("MCP execute_code answers each chart as an image block, read by the SDK's client", async () => {
  const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${ACME}` } },
  })
  const client = new Client({ name: 'execgate-test', version: '1.0.0' })
  await client.connect(transport)
  try {
    const answer = await client.callTool({ name: 'execute_code', arguments: { language: 'python', code: CHART } })
    const content = answer.content as Array<{ type: string; text?: string; data?: string; mimeType?: string }>
    expect(answer.isError).toBe(false)
    expect(content.map((block) => block.type)).toEqual(['text', 'text', 'image'])
    expect(content[0]!.text).toContain('made a chart (PNG), a table (region, revenue; 2 rows).')
    expect(content[1]!.text).toBe('| region | revenue |\n| --- | --- |\n| north | 15 |\n| south | 20 |')
    expect(content[2]!.mimeType).toBe('image/png')
    expect(Buffer.from(content[2]!.data!, 'base64').subarray(0, 8).toString('latin1')).toBe(PNG_MAGIC)
    // The structured result names the image and its size; its bytes travel once, in the image block.
    const structured = answer.structuredContent as unknown as ExecutionResult
    expect(structured.outputs?.[1]).toEqual({ kind: 'image', mimeType: 'image/png', bytes: expect.any(Number), content: 2 })
  } finally {
    await client.close()
  }
}, 120_000)

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>'
const DISPLAYS = [
  "display([{ region: 'north', revenue: 15 }, { region: 'south', revenue: 20 }])",
  `display(${JSON.stringify(SVG)})`,
  "'shown'",
].join('\n')

test('JavaScript on quickjs answers its display() items in the JSON, as a table and an SVG image', async () => {
  const answer = await call('/v1/executions', { key: ACME, body: { language: 'javascript', code: DISPLAYS } })
  expect(answer.status).toBe(200)
  const result = answer.json as ExecutionResult
  expect({ status: result.status, adapter: result.adapter, value: result.value }).toEqual({
    status: 'ok',
    adapter: 'quickjs',
    value: 'shown',
  })
  expect(result.outputs).toEqual([
    {
      kind: 'table',
      columns: ['region', 'revenue'],
      rows: [
        ['north', 15],
        ['south', 20],
      ],
      rowCount: 2,
      bytes: expect.any(Number),
    },
    { kind: 'image', mimeType: 'image/svg+xml', data: Buffer.from(SVG).toString('base64'), bytes: Buffer.byteLength(SVG) },
  ])
}, 60_000)

test('the SSE stream sends each display() item when the code makes it: display, busy for a while, display', async () => {
  const BUSY_MS = 1500
  const client = new ExecgateClient({ url: server.url, apiKey: ACME })
  const code = [
    "console.log('first')",
    'display({ step: 1 })',
    `const until = Date.now() + ${BUSY_MS}`,
    'while (Date.now() < until) {}',
    'display({ step: 2 })',
  ].join('\n')
  const arrivals: Array<{ type: string; at: number }> = []
  const streamed: Output[] = []
  let result: ExecutionResult | undefined
  for await (const event of client.stream({ language: 'javascript', code, timeoutMs: 20_000 })) {
    arrivals.push({ type: event.type, at: performance.now() })
    if (event.type === 'output') {
      expect(event.index).toBe(streamed.length)
      streamed.push(event.output)
    }
    if (event.type === 'result') result = event.result
  }
  expect(arrivals.map((arrival) => arrival.type)).toEqual(['stdout', 'output', 'output', 'result'])
  expect(result?.status).toBe('ok')
  expect(result?.outputs).toEqual(streamed)
  expect(streamed.map((output) => output.kind === 'json' && output.data)).toEqual([{ step: 1 }, { step: 2 }])
  // The first item left the server while the code was still busy, not with the result: a third of the busy time at
  // least separates them (sent at the end, they would arrive together).
  const [, first, second] = arrivals
  expect(second!.at - first!.at).toBeGreaterThan(BUSY_MS / 3)
}, 60_000)

/** Python busy for a while without `time` (not in the data profile): a loop on the clock. */
const PYTHON_BUSY_MS = 1500
const pythonBusy = [
  'import datetime',
  `until = datetime.datetime.now() + datetime.timedelta(milliseconds=${PYTHON_BUSY_MS})`,
  'while datetime.datetime.now() < until:',
  '    pass',
]

test.each([
  {
    path: 'warm (pandas: a child of the zygote)',
    code: ['import pandas as pd', "display(pd.DataFrame({'region': ['north'], 'revenue': [15]}))", ...pythonBusy, "print('after')"],
    kind: 'table',
  },
  { path: 'cold (a fresh python3)', code: ["display({'step': 1})", ...pythonBusy, "print('after')"], kind: 'json' },
])(
  'Python on the process tier, $path: the output event arrives while the code still runs',
  async ({ code, kind }) => {
    const client = new ExecgateClient({ url: server.url, apiKey: ACME })
    const arrivals: Array<{ type: string; at: number }> = []
    let result: ExecutionResult | undefined
    for await (const event of client.stream({ language: 'python', code: code.join('\n'), timeoutMs: 30_000 })) {
      arrivals.push({ type: event.type, at: performance.now() })
      if (event.type === 'output') expect({ index: event.index, kind: event.output.kind }).toEqual({ index: 0, kind })
      if (event.type === 'result') result = event.result
    }
    expect({ status: result?.status, adapter: result?.adapter, stderr: result?.stderr }).toEqual({
      status: 'ok',
      adapter: 'process',
      stderr: '',
    })
    expect(result?.outputs?.map((output) => output.kind)).toEqual([kind])
    // Sent at the end, the item would come after the code's later print, together with the result. (The print may
    // arrive in more than one chunk.)
    const types = arrivals.map((arrival) => arrival.type).filter((type, at, all) => type !== all[at - 1])
    expect(types).toEqual(['output', 'stdout', 'result'])
    expect(arrivals.at(-1)!.at - arrivals[0]!.at).toBeGreaterThan(PYTHON_BUSY_MS / 3)
  },
  120_000,
)
