import fs from 'node:fs'
import { once } from 'node:events'

/** A cold data run's sandbox: bubblewrap with what the data stack needs, nothing else. */
export const COLD_BWRAP = [
  '--unshare-all',
  '--die-with-parent',
  '--new-session',
  '--clearenv',
  '--setenv',
  'MPLBACKEND',
  'Agg',
  '--setenv',
  'MPLCONFIGDIR',
  '/tmp/matplotlib',
  '--setenv',
  'HOME',
  '/tmp',
  '--ro-bind',
  '/usr',
  '/usr',
  '--symlink',
  'usr/bin',
  '/bin',
  '--symlink',
  'usr/lib',
  '/lib',
  '--symlink',
  'usr/lib64',
  '/lib64',
  ...['/etc/ld.so.cache', '/etc/alternatives', '/etc/matplotlibrc', '/etc/fonts']
    .filter((file) => fs.existsSync(file))
    .flatMap((file) => ['--ro-bind', file, file]),
  '--proc',
  '/proc',
  '--dev',
  '/dev',
  '--tmpfs',
  '/tmp',
  '--tmpfs',
  '/workspace',
  '--chdir',
  '/workspace',
]

export const PANDAS_SUM = "import pandas as pd\npd.DataFrame({'a': [1, 2, 3]}).a.sum()"

/** The 10-line groupby and chart script of docs/data.md's figures. */
export const GROUPBY_CHART = [
  'import pandas as pd',
  'import matplotlib.pyplot as plt',
  "df = pd.DataFrame({'region': ['north', 'south', 'east', 'west'] * 50, 'month': list(range(1, 51)) * 4,",
  "                   'sales': [float(i % 17) * 3.5 for i in range(200)]})",
  "totals = df.groupby('region').sales.sum().sort_values()",
  "monthly = df.groupby('month').sales.mean()",
  'fig, ax = plt.subplots(figsize=(6, 4))',
  "monthly.plot(ax=ax, title='Average sales by month')",
  "fig.savefig('/tmp/chart.png', dpi=80)",
  'totals.to_dict()',
].join('\n')

/** Reads the CSV at `file` with pandas and sums a column, as the last expression's value (or printed, for `python3 -c`). */
export const READ_CSV = (file: string, printed = false) => {
  const sum = `int(pd.read_csv(${JSON.stringify(file)}).units.sum())`
  return `import pandas as pd\n${printed ? `print(${sum})` : sum}`
}

/** Writes a sales CSV (date, region, units, price) of at least `minBytes`; answers its size. */
export async function writeSalesCsv(file: string, minBytes: number): Promise<number> {
  const out = fs.createWriteStream(file)
  const regions = ['north', 'south', 'east', 'west']
  let bytes = 0
  const header = 'date,region,units,price\n'
  out.write(header)
  bytes += header.length
  for (let row = 0; bytes < minBytes;) {
    const lines: string[] = []
    for (let i = 0; i < 10_000; i++, row++) {
      const day = String((row % 28) + 1).padStart(2, '0')
      const month = String((row % 12) + 1).padStart(2, '0')
      lines.push(`2025-${month}-${day},${regions[row % 4]},${(row * 7) % 50},${((row * 13) % 10_000) / 100}`)
    }
    const chunk = `${lines.join('\n')}\n`
    bytes += chunk.length
    if (!out.write(chunk)) await once(out, 'drain')
  }
  out.end()
  await once(out, 'finish')
  return bytes
}
