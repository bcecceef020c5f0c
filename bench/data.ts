import { spawn } from 'node:child_process'
import fs from 'node:fs'
import { createExecgate } from '../src'
import { measureInterleaved, ratio, type BenchSection } from './harness'

/** A cold data run: a fresh bubblewrap sandbox and a fresh python3 that imports pandas itself. */
const COLD_BWRAP = [
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

function coldRun(code: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/bwrap', [...COLD_BWRAP, '/usr/bin/python3', '-I', '-c', code], { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr.on('data', (chunk: Buffer) => (err += chunk))
    child.on('error', reject)
    child.on('close', (exit) => (exit === 0 ? resolve() : reject(new Error(`cold python exited ${exit}: ${err.slice(-300)}`))))
  })
}

/** Cold `python3 -c` data runs under bubblewrap against the same code on the process tier's warm data interpreter. */
export async function run(): Promise<BenchSection> {
  const execgate = await createExecgate({
    overrides: { execution: { enabled: ['process'], adapter: 'process' }, log: { level: 'silent' }, readiness: { enabled: false } },
  })
  const warm = (code: string, check: (value: unknown) => boolean) => async () => {
    const result = await execgate.execute({ language: 'python', code }, { profile: 'data' })
    if (result.status !== 'ok' || !check(result.value))
      throw new Error(`execgate answered ${result.status}: ${result.message ?? ''} ${result.stderr.slice(-300)}`)
  }
  try {
    const [coldImport, coldSum, warmSum, coldChart, warmChart] = await measureInterleaved(
      [
        { name: "cold: bwrap … python3 -c 'import pandas'", fn: () => coldRun('import pandas') },
        { name: 'cold: bwrap … python3 -c <pandas DataFrame sum>', fn: () => coldRun(`${PANDAS_SUM.replace('\npd.', '\nprint(pd.')})`) },
        { name: 'warm: execgate process tier, pandas DataFrame sum', fn: warm(PANDAS_SUM, (value) => value === 6) },
        { name: 'cold: bwrap … python3 -c <10-line groupby + chart>', fn: () => coldRun(GROUPBY_CHART) },
        {
          name: 'warm: execgate process tier, 10-line groupby + chart',
          fn: warm(GROUPBY_CHART, (value) => typeof value === 'object' && value !== null),
        },
      ],
      { iterations: 30, batch: 5, warmup: 2 },
    )
    return {
      title: 'data Python: cold python3 under bubblewrap vs the warm data interpreter (process tier)',
      measurements: [coldImport!, coldSum!, warmSum!, coldChart!, warmChart!],
      ratios: [
        ratio("warm pandas sum / cold python3 -c 'import pandas'", warmSum!, coldImport!, '≤ 0.2×, and ≤ 60 ms'),
        ratio('warm pandas sum / cold pandas sum', warmSum!, coldSum!),
        ratio('warm groupby + chart / cold groupby + chart', warmChart!, coldChart!, '≤ 0.3×'),
      ],
      notes: [
        'warm: the whole request through ExecutionService under the shipped `data` profile (policy, static checks, routing, admission); each run is a fresh child of the zygote in its own uid, user/mount/pid/net/ipc/uts namespaces, tmpfs workspace, rlimits',
        'cold: the bubblewrap sandbox alone (no service), python3 importing the data stack itself',
      ],
    }
  } finally {
    await execgate.dispose()
  }
}
