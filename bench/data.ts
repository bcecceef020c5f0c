import { spawn } from 'node:child_process'
import fs from 'node:fs'
import { Readable } from 'node:stream'
import os from 'node:os'
import path from 'node:path'
import type { Execgate } from '../src'
import { against, tagged, workingSubject, type Subject } from './against'
import { measureInterleaved, ratio, type BenchSection, type Measurement } from './harness'
import { COLD_BWRAP, GROUPBY_CHART, PANDAS_SUM, READ_CSV, writeSalesCsv } from './data-fixtures'

export { GROUPBY_CHART, PANDAS_SUM } from './data-fixtures'

export const compares = true

function python(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    child.stderr.on('data', (chunk: Buffer) => (err += chunk))
    child.on('error', reject)
    child.on('close', (exit) => (exit === 0 ? resolve() : reject(new Error(`${file} exited ${exit}: ${err.slice(-300)}`))))
  })
}

/** A cold data run: a fresh bubblewrap sandbox and a fresh python3 that imports pandas itself. */
const coldRun = (code: string) => python('/usr/bin/bwrap', [...COLD_BWRAP, '/usr/bin/python3', '-I', '-c', code])

/**
 * Cold `python3 -c` data runs under bubblewrap against the same code on the process tier's warm data interpreter, for
 * each subject (this tree, and the `--against` ref's build), all interleaved; then a 100 MB CSV read by pandas through
 * execgate (uploaded once, bound in read-only) against the host's python3 reading the same file outside any sandbox.
 */
export async function run(subjects: readonly Subject[] = [workingSubject()]): Promise<BenchSection> {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-data-'))
  const gates: Execgate[] = []
  try {
    for (const subject of subjects)
      gates.push(
        await subject.lib.createExecgate({
          overrides: {
            execution: { enabled: ['process'], adapter: 'process' },
            log: { level: 'silent' },
            readiness: { enabled: false },
            fabric: { dataDir: path.join(scratch, subject.tag) },
          },
        }),
      )
    const warm = (index: number, code: string, check: (value: unknown) => boolean) => async () => {
      const result = await gates[index]!.execute({ language: 'python', code }, { profile: 'data' })
      if (result.status !== 'ok' || !check(result.value))
        throw new Error(`execgate answered ${result.status}: ${result.message ?? ''} ${result.stderr.slice(-300)}`)
    }
    const series = (name: string, code: string, check: (value: unknown) => boolean) =>
      subjects.map((subject, index) => ({
        name: tagged(subjects, subject, `warm: execgate process tier, ${name}`),
        fn: warm(index, code, check),
      }))
    const sums = series('pandas DataFrame sum', PANDAS_SUM, (value) => value === 6)
    const charts = series('10-line groupby + chart', GROUPBY_CHART, (value) => typeof value === 'object' && value !== null)
    const measured = await measureInterleaved(
      [
        { name: "cold: bwrap … python3 -c 'import pandas'", fn: () => coldRun('import pandas') },
        { name: 'cold: bwrap … python3 -c <pandas DataFrame sum>', fn: () => coldRun(`${PANDAS_SUM.replace('\npd.', '\nprint(pd.')})`) },
        ...sums,
        { name: 'cold: bwrap … python3 -c <10-line groupby + chart>', fn: () => coldRun(GROUPBY_CHART) },
        ...charts,
      ],
      { iterations: 30, batch: 5, warmup: 2 },
    )
    const n = subjects.length
    const [coldImport, coldSum] = measured as [Measurement, Measurement]
    const warmSums = measured.slice(2, 2 + n)
    const coldChart = measured[2 + n]!
    const warmCharts = measured.slice(3 + n)
    const csv = await measureCsv(gates[gates.length - 1]!, scratch)
    const work = n - 1
    return {
      title: 'data Python: cold python3 under bubblewrap vs the warm data interpreter (process tier); a 100 MB CSV',
      measurements: [coldImport, coldSum, ...warmSums, coldChart, ...warmCharts, ...csv.measurements],
      ratios: [
        ...warmSums.map((sum, index) =>
          ratio(
            tagged(subjects, subjects[index]!, "warm pandas sum / cold python3 -c 'import pandas'"),
            sum,
            coldImport,
            '≤ 0.2×, and ≤ 60 ms',
          ),
        ),
        ratio(tagged(subjects, subjects[work]!, 'warm pandas sum / cold pandas sum'), warmSums[work]!, coldSum),
        ...warmCharts.map((chart, index) =>
          ratio(tagged(subjects, subjects[index]!, 'warm groupby + chart / cold groupby + chart'), chart, coldChart, '≤ 0.3×'),
        ),
        ...(n > 1
          ? [against('warm pandas sum', warmSums[work]!, warmSums[0]!), against('warm groupby + chart', warmCharts[work]!, warmCharts[0]!)]
          : []),
        ratio(`100 MB CSV: execgate (${subjects[work]!.tag}) / host python3`, csv.measurements[1]!, csv.measurements[0]!, '≤ 1.5×'),
        ratio('warm pandas sum: one upload bound in / no upload', csv.measurements[3]!, csv.measurements[2]!),
      ],
      notes: [
        'warm: the whole request through ExecutionService under the shipped `data` profile (policy, ' +
          'static checks, routing, admission); each run is a fresh child of the zygote in its own ' +
          'uid, user/mount/pid/net/ipc/uts namespaces, tmpfs workspace, rlimits',
        'cold: the bubblewrap sandbox alone (no service), python3 importing the data stack itself',
        `100 MB CSV: ${csv.bytes} bytes generated here, uploaded once (uploads.put), named { ` +
          `path, sha256 } and bound in read-only; the host series is /usr/bin/python3 -c on the same ` +
          `file, no sandbox; ${CSV_RUNS} runs each, interleaved`,
      ],
    }
  } finally {
    for (const gate of gates) await gate.dispose()
    fs.rmSync(scratch, { recursive: true, force: true })
  }
}

const CSV_RUNS = 5

async function measureCsv(execgate: Execgate, scratch: string): Promise<{ measurements: Measurement[]; bytes: number }> {
  const file = path.join(scratch, 'big.csv')
  const bytes = await writeSalesCsv(file, 100 * 1024 * 1024)
  const uploaded = await execgate.uploads.put('local', fs.createReadStream(file))
  const code = READ_CSV('big.csv')
  // The same warm run with and without an upload to bind: with one it takes the pre-forked spare too (its G binds
  // the upload at its go), so the difference is the link and the bind, not a child made on demand.
  const small = await execgate.uploads.put('local', Readable.from([Buffer.from('a,b\n1,2\n3,4\n')]))
  const warmSum = (files?: { path: string; sha256: string }[]) => async () => {
    const result = await execgate.execute({ language: 'python', code: PANDAS_SUM, ...(files ? { files } : {}) }, { profile: 'data' })
    if (result.status !== 'ok' || result.value !== 6)
      throw new Error(`execgate answered ${result.status}: ${result.message ?? ''} ${result.stderr.slice(-300)}`)
  }
  const uploads = await measureInterleaved(
    [
      { name: 'warm: pandas DataFrame sum, no upload', fn: warmSum() },
      { name: 'warm: pandas DataFrame sum, one upload bound in', fn: warmSum([{ path: 'small.csv', sha256: small.sha256 }]) },
    ],
    { iterations: 20, batch: 5, warmup: 2 },
  )
  const measurements = await measureInterleaved(
    [
      {
        name: 'host /usr/bin/python3 -c <pd.read_csv(100 MB).units.sum()>',
        fn: () => python('/usr/bin/python3', ['-c', READ_CSV(file, true)]),
      },
      {
        name: 'execgate process tier, the upload bound in: pd.read_csv(100 MB).units.sum()',
        fn: async () => {
          const result = await execgate.execute(
            { language: 'python', code, files: [{ path: 'big.csv', sha256: uploaded.sha256 }] },
            { profile: 'data' },
          )
          if (result.status !== 'ok' || typeof result.value !== 'number')
            throw new Error(`execgate answered ${result.status}: ${result.message ?? ''} ${result.stderr.slice(-300)}`)
        },
      },
    ],
    { iterations: CSV_RUNS, batch: 1, warmup: 1 },
  )
  return { measurements: [...measurements, ...uploads], bytes }
}
