import { createExecgate, type Execgate } from '../../src'
import { DEFAULT_POLICY } from '../../src/policy'
import type { ExecutionResult, Output, SecurityPolicy } from '../../src/core'
import { DockerAdapter } from '../../adapters/docker'

/**
 * Rich outputs from real Python with the data stack: on the process tier's warm path (a child of the zygote), its
 * cold path (a fresh python3 under bubblewrap: a run that collects files runs cold) and a docker container
 * (podman, the image execgate-sandbox:bookworm). Each makes the same figures, tables and display() items.
 */
const SOCKET = process.env.EXECGATE_PODMAN_SOCKET ?? '/run/execgate-podman/podman.sock'

const POLICY: SecurityPolicy = Object.freeze({
  ...DEFAULT_POLICY,
  wallTimeMs: 30_000,
  cpuTimeMs: 30_000,
  memoryMb: 1024,
  outputBytes: 64 * 1024,
  maxOutputs: 10,
  outputsBytes: 4 * 1024 * 1024,
  filesystem: 'read_only',
  allowedImports: ['pandas', 'numpy', 'matplotlib', 'os'],
}) as SecurityPolicy

const PATHS = [
  { name: 'process, warm', adapter: 'process', policy: POLICY },
  { name: 'process, cold', adapter: 'process', policy: { ...POLICY, filesystem: 'sandboxed' } as SecurityPolicy },
  { name: 'docker', adapter: 'docker', policy: { ...POLICY, memoryMb: 512 } as SecurityPolicy },
] as const

const CHART = [
  'import pandas as pd',
  'import matplotlib.pyplot as plt',
  "sales = pd.DataFrame({'region': ['north', 'south', 'north', 'east'], 'revenue': [10.5, 20.0, 4.5, 7.25]})",
  'plt.plot([1, 4, 9])',
  'plt.show()',
  "sales.groupby('region').revenue.sum().plot(kind='bar')",
  "sales.groupby('region').revenue.sum()",
].join('\n')

function pngSize(output: Output): { width: number; height: number } {
  if (output.kind !== 'image') throw new Error(`not an image: ${output.kind}`)
  const bytes = Buffer.from(output.data, 'base64')
  expect(bytes.subarray(0, 8).toString('latin1')).toBe('\x89PNG\r\n\x1a\n')
  expect(output.bytes).toBe(bytes.length)
  return { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) }
}

function describeRun(result: ExecutionResult): string {
  return `${result.status} ${result.message ?? ''}\nstderr: ${result.stderr.slice(-600)}`
}

describe('rich outputs from the data Python', () => {
  let execgate: Execgate
  const run = (code: string, path: (typeof PATHS)[number], overrides: Partial<SecurityPolicy> = {}) =>
    execgate.execute(
      { language: 'python', code, adapter: path.adapter },
      { basePolicy: { ...path.policy, ...overrides } as SecurityPolicy },
    )

  beforeAll(async () => {
    const probe = new DockerAdapter({ socketPath: SOCKET })
    const availability = await probe.checkAvailability().finally(() => probe.dispose())
    if (availability.status !== 'available')
      throw new Error(`the docker adapter's engine is not ready (run scripts/setup/podman.sh): ${availability.reason}`)
    execgate = await createExecgate({
      overrides: {
        execution: { enabled: ['process', 'docker'] },
        adapters: { docker: { socketPath: SOCKET } },
        readiness: { enabled: false },
        log: { level: 'silent' },
      },
    })
  }, 120_000)
  afterAll(() => execgate?.dispose(), 30_000)

  test('the warm path is the zygote child and the cold one a fresh sandbox', async () => {
    const probe = "import pandas, os\nlen(os.listdir('/proc'))"
    expect(await run(probe, PATHS[0])).toMatchObject({ status: 'ok', value: 0 })
    const cold = await run(probe, PATHS[1])
    expect(cold.status).toBe('ok')
    expect(cold.value).toBeGreaterThan(0)
  }, 120_000)

  for (const path of PATHS) {
    describe(path.name, () => {
      test('a shown figure, a figure left open and a Series value: two PNG images then a table, in order', async () => {
        const result = await run(CHART, path)
        expect({ status: result.status, context: describeRun(result) }).toMatchObject({ status: 'ok' })
        const outputs = result.outputs ?? []
        expect(outputs.map((output) => output.kind)).toEqual(['image', 'table', 'image'])
        // The shown figure first (plt.show() renders and closes it), then the value's table, then the open figure.
        expect(pngSize(outputs[0]!)).toEqual({ width: 640, height: 480 })
        expect(pngSize(outputs[2]!)).toEqual({ width: 640, height: 480 })
        expect(outputs[1]).toEqual({
          kind: 'table',
          columns: ['region', 'revenue'],
          rows: [
            ['east', 7.25],
            ['north', 15],
            ['south', 20],
          ],
          rowCount: 3,
          bytes: expect.any(Number),
        })
        expect(result.value).toEqual([7.25, 15, 20])
      }, 120_000)

      test('SVG on request, and display() of HTML, JSON, an SVG string and a DataFrame', async () => {
        const code = [
          'import pandas as pd',
          'import matplotlib.pyplot as plt',
          "plt.rcParams['savefig.format'] = 'svg'",
          'plt.plot([3, 1, 2])',
          "display('<table><tr><td>1</td></tr></table>')",
          "display({'total': 41.5, 'regions': ['north', 'south']})",
          'display(\'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"></svg>\')',
          "display(pd.DataFrame({'a': [1, 2], 'b': ['x', 'y']}))",
        ].join('\n')
        const result = await run(code, path)
        expect({ status: result.status, context: describeRun(result) }).toMatchObject({ status: 'ok' })
        const outputs = result.outputs ?? []
        expect(outputs.map((output) => [output.kind, 'mimeType' in output ? output.mimeType : undefined])).toEqual([
          ['html', 'text/html'],
          ['json', 'application/json'],
          ['image', 'image/svg+xml'],
          ['table', undefined],
          ['image', 'image/svg+xml'],
        ])
        expect(outputs[1]).toMatchObject({ data: { total: 41.5, regions: ['north', 'south'] } })
        expect(outputs[3]).toMatchObject({
          columns: ['a', 'b'],
          rows: [
            [1, 'x'],
            [2, 'y'],
          ],
          rowCount: 2,
        })
        const figure = outputs[4]!
        expect(figure.kind === 'image' && Buffer.from(figure.data, 'base64').toString('utf8')).toContain('<svg')
      }, 120_000)

      test("outputs: { imageFormat: 'svg' } on the request saves the charts as SVG", async () => {
        const code = 'import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\nplt.figure()\nplt.plot([2, 1])'
        const result = await execgate.execute(
          { language: 'python', code, adapter: path.adapter, outputs: { imageFormat: 'svg' } },
          { basePolicy: path.policy },
        )
        expect({ status: result.status, context: describeRun(result) }).toMatchObject({ status: 'ok' })
        expect(result.outputs?.map((output) => output.kind === 'image' && output.mimeType)).toEqual(['image/svg+xml', 'image/svg+xml'])
        const shown = result.outputs![0]!
        expect(shown.kind === 'image' && Buffer.from(shown.data, 'base64').toString('utf8')).toContain('<svg')
      }, 120_000)

      test('each output reaches the caller while the code runs, before what the code prints after it', async () => {
        const code = [
          'import pandas as pd',
          "display(pd.DataFrame({'region': ['north'], 'revenue': [15]}))",
          'total = 0',
          'for i in range(3000000):',
          '    total += i',
          "print('after')",
        ].join('\n')
        const events: string[] = []
        const streamed: unknown[] = []
        const result = await execgate.execute(
          { language: 'python', code, adapter: path.adapter },
          {
            basePolicy: path.policy,
            onOutput: (stream, chunk) => events.push(`${stream}:${chunk.trim()}`),
            onRichOutput: (output, index) => {
              events.push(`output ${index}:${output.kind}`)
              streamed.push(output)
            },
          },
        )
        expect({ status: result.status, context: describeRun(result) }).toMatchObject({ status: 'ok' })
        // Sent with the report, the table would come after the print.
        expect(events.filter((event) => event !== 'stdout:')).toEqual(['output 0:table', 'stdout:after'])
        expect(result.outputs).toEqual(streamed)
      }, 120_000)

      test('a run stopped at its deadline keeps the outputs it made before', async () => {
        const code = "import pandas as pd\ndisplay(pd.DataFrame({'a': [1]}))\nwhile True:\n    pass"
        const result = await run(code, path, { wallTimeMs: 2000 })
        expect(result.status).toBe('timeout')
        expect(result.outputs).toEqual([expect.objectContaining({ kind: 'table', columns: ['a'], rows: [[1]], rowCount: 1 })])
      }, 120_000)

      test('a frame too large for the output cap: its first rows as a table with the row count, the value left out', async () => {
        const code = "import pandas as pd\npd.DataFrame({'n': range(100000), 'sq': [i * i for i in range(100000)]})"
        const result = await run(code, path)
        expect({ status: result.status, context: describeRun(result) }).toMatchObject({ status: 'ok' })
        const table = result.outputs?.[0]
        if (table?.kind !== 'table') throw new Error(`no table: ${JSON.stringify(result.outputs)?.slice(0, 200)}`)
        expect(table.rowCount).toBe(100000)
        expect(table.rows.length).toBeGreaterThan(100)
        expect(table.rows.length).toBeLessThan(100000)
        expect(table.rows[7]).toEqual([7, 49])
        expect(table.bytes).toBeLessThanOrEqual(POLICY.outputBytes)
        expect(result.value).toBeUndefined()
      }, 120_000)

      test('the outputs count and bytes are limits: past them the run is output_limit and keeps what fits', async () => {
        const code = 'import matplotlib.pyplot as plt\nfor i in range(6):\n    plt.figure()\n    plt.plot([i, i + 1])\n    plt.show()'
        const counted = await run(code, path, { maxOutputs: 2 })
        expect(counted.status).toBe('output_limit')
        expect(counted.outputs).toHaveLength(2)
        expect(counted.message).toContain('4 outputs left out: a run may return 2 outputs')
        const sized = await run(code, path, { outputsBytes: 1000 })
        expect(sized.status).toBe('output_limit')
        expect(sized.outputs ?? []).toHaveLength(0)
        expect(sized.message).toContain('(policy maxOutputs, outputsBytes)')
      }, 120_000)
    })
  }

  test('an image format other than png or svg is refused before the run', async () => {
    const refused = await execgate.execute(
      { language: 'python', code: '1', adapter: 'process', outputs: { imageFormat: 'gif' } } as never,
      { basePolicy: POLICY },
    )
    expect(refused.status).toBe('invalid_request')
    expect(refused.message).toContain('imageFormat')
  })

  test('a request may tighten the outputs limits but not loosen them', async () => {
    const loosened = await execgate.execute(
      { language: 'python', code: '1', adapter: 'process', policy: { maxOutputs: POLICY.maxOutputs + 1 } },
      { basePolicy: POLICY },
    )
    expect(loosened).toMatchObject({ status: 'policy_violation' })
    expect(loosened.message).toContain('maxOutputs')
  })
})
