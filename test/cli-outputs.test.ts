import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

/**
 * `execgate run … --out DIR` writes the run's rich outputs as files: the real CLI (dist/, built by `npm test`) on
 * the process tier with the data stack, as the README's quick start runs examples/sales-chart.py.
 */
const root = path.join(__dirname, '..')
const bin = path.join(root, 'bin', 'execgate.js')

function execgate(args: string[]) {
  const child = spawnSync(process.execPath, [bin, ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, EXECGATE_FABRIC_DATA_DIR: process.env.EXECGATE_FABRIC_DATA_DIR },
    timeout: 120_000,
  })
  return { code: child.status, stdout: child.stdout, stderr: child.stderr }
}

describe('execgate run --out', () => {
  let out: string
  beforeAll(() => {
    if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'index.js')))
      throw new Error('dist/ is missing: run `npm run build` (npm test does)')
  })
  beforeEach(() => (out = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-out-'))))
  afterEach(() => fs.rmSync(out, { recursive: true, force: true }))

  test('examples/sales-chart.py: its chart is written as output-1.png and named in the summary', () => {
    const run = execgate(['run', 'examples/sales-chart.py', '--profile', 'data', '--file', 'examples/data/sales.csv', '--out', out])
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' })
    expect(run.stdout).toContain('outputs: a chart (PNG)')
    expect(run.stdout).toContain(`wrote 1 output file(s): ${path.join(out, 'output-1.png')}`)
    const png = fs.readFileSync(path.join(out, 'output-1.png'))
    expect(png.subarray(0, 8).toString('latin1')).toBe('\x89PNG\r\n\x1a\n')
    // figsize=(7, 4) at the default 100 dpi.
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([700, 400])
  }, 150_000)

  test('a table becomes CSV with its header, a display() item JSON, in the order the code made them', () => {
    const script = path.join(out, 'totals.py')
    fs.writeFileSync(
      script,
      [
        'import pandas as pd',
        "display({'note': 'totals, by region'})",
        "pd.DataFrame({'region': ['north', 'south, east'], 'revenue': [15.5, 20]})",
      ].join('\n'),
    )
    const run = execgate(['run', script, '--profile', 'data', '--out', path.join(out, 'files')])
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' })
    expect(run.stdout).toContain('| region | revenue |')
    expect(fs.readdirSync(path.join(out, 'files')).sort()).toEqual(['output-1.json', 'output-2.csv'])
    expect(JSON.parse(fs.readFileSync(path.join(out, 'files', 'output-1.json'), 'utf8'))).toEqual({ note: 'totals, by region' })
    expect(fs.readFileSync(path.join(out, 'files', 'output-2.csv'), 'utf8')).toBe('region,revenue\nnorth,15.5\n"south, east",20\n')
  }, 150_000)

  test('JavaScript on quickjs: display() writes an SVG and a table as files', () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><circle cx="4" cy="4" r="3"/></svg>'
    const script = path.join(out, 'chart.js')
    fs.writeFileSync(
      script,
      [`display(${JSON.stringify(svg)})`, "display([{ region: 'north', units: 3 }, { region: 'south', units: 5 }])"].join('\n'),
    )
    const run = execgate(['run', script, '--out', path.join(out, 'files')])
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' })
    expect(fs.readdirSync(path.join(out, 'files')).sort()).toEqual(['output-1.svg', 'output-2.csv'])
    expect(fs.readFileSync(path.join(out, 'files', 'output-1.svg'), 'utf8')).toBe(svg)
    expect(fs.readFileSync(path.join(out, 'files', 'output-2.csv'), 'utf8')).toBe('region,units\nnorth,3\nsouth,5\n')
  }, 150_000)
})
