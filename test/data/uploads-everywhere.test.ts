import { createHash } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { createExecgate, type Execgate } from '../../src'
import { DEFAULT_POLICY } from '../../src/policy'
import type { SecurityPolicy } from '../../src/core'
import type { ProcessAdapter } from '../../adapters/process'

/**
 * Issue 25: an upload (PUT /v1/files, here the library's `execgate.uploads.put`) is usable everywhere a run happens:
 * the process tier's warm data interpreter binds it read-only like a cold run; a task naming it runs after the
 * process that submitted it is gone; plan steps name it; a persistent sandbox takes it into its workspace by digest
 * (with the ledger off too). Real bubblewrap, the real warm zygote, real SQLite stores.
 */

const CSV = 'region,amount\n' + Array.from({ length: 3000 }, (_, i) => `r${i % 5},${i}`).join('\n') + '\n'
const TOTAL = (2999 * 3000) / 2
const DIGEST = createHash('sha256').update(CSV).digest('hex')
const SUM_CSV = "sum(int(line.split(',')[1]) for line in open('sales.csv').read().splitlines()[1:])"

const DATA_POLICY: SecurityPolicy = Object.freeze({
  ...DEFAULT_POLICY,
  wallTimeMs: 30_000,
  cpuTimeMs: 30_000,
  memoryMb: 1024,
  filesystem: 'read_only',
  allowedImports: ['pandas', 'os', 'errno'],
}) as SecurityPolicy

let dataDir: string
const overrides = (ledger: boolean) => ({
  execution: { enabled: ['placeholder', 'quickjs', 'monty', 'process'] },
  readiness: { enabled: false },
  log: { level: 'silent' as const },
  fabric: { dataDir, ledger: { enabled: ledger } },
})

beforeAll(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-uploads-everywhere-'))
})
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))

describe('one execgate on a data folder', () => {
  let execgate: Execgate
  beforeAll(async () => {
    execgate = await createExecgate({ warm: false, overrides: overrides(false) })
    await execgate.uploads.put('local', Readable.from([Buffer.from(CSV)]))
  }, 60_000)
  afterAll(() => execgate?.dispose(), 30_000)

  test('the warm data interpreter reads an upload bound read-only, as a cold run does, and cannot write it', async () => {
    const processAdapter = execgate.adapters().find((adapter) => adapter.name === 'process') as ProcessAdapter
    // A first warm run: the interpreter is up and has made the spare for the next run when it answers.
    const first = await execgate.execute({ language: 'python', adapter: 'process', code: 'import pandas\n1' }, { basePolicy: DATA_POLICY })
    expect(first).toMatchObject({ status: 'ok', value: 1 })
    await new Promise((resolve) => setImmediate(resolve))
    const before = processAdapter.warmRuns()!
    const code = [
      'import pandas as pd, os, errno',
      "frame = pd.read_csv('data/sales.csv')",
      'try:',
      "    open('data/sales.csv', 'a').write('r9,1\\n')",
      "    wrote = 'written'",
      'except OSError as error:',
      '    wrote = errno.errorcode[error.errno]',
      // /proc is covered in the warm child (an empty tmpfs), not in a cold run: this is the warm path.
      "[len(os.listdir('/proc')), int(frame.amount.sum()), os.stat('data/sales.csv').st_dev != os.stat('.').st_dev, wrote]",
    ].join('\n')
    const result = await execgate.execute(
      { language: 'python', adapter: 'process', code, files: [{ path: 'data/sales.csv', sha256: DIGEST }] },
      { basePolicy: DATA_POLICY },
    )
    expect({ status: result.status, stderr: result.stderr.slice(-400) }).toMatchObject({ status: 'ok' })
    expect(result.value).toEqual([0, TOTAL, true, expect.stringMatching(/^(EROFS|EACCES|EPERM)$/)])
    // The run with an upload took the spare made ahead of it (its uploads bound at its go), not a sandbox of its own.
    expect(processAdapter.warmRuns()).toEqual({ fromSpare: before.fromSpare + 1, madeOnDemand: before.madeOnDemand })
    const blob = (await execgate.uploads.locate('local', DIGEST))!.hostPath
    expect(createHash('sha256').update(fs.readFileSync(blob)).digest('hex')).toBe(DIGEST)
    // The next warm run, without the upload, sees no trace of it.
    const next = await execgate.execute(
      { language: 'python', adapter: 'process', code: "import pandas, os\n[len(os.listdir('/proc')), sorted(os.listdir('.'))]" },
      { basePolicy: DATA_POLICY },
    )
    expect(next).toMatchObject({ status: 'ok', value: [0, []] })
  }, 120_000)

  test("plan steps name uploads; a dependent step reads the step's value; another tenant's plan cannot", async () => {
    const spec = {
      goal: 'total the sales',
      steps: [
        { id: 'total', language: 'python' as const, code: SUM_CSV, files: [{ path: 'sales.csv', sha256: DIGEST }] },
        {
          id: 'double',
          language: 'javascript' as const,
          dependsOn: ['total'],
          code: 'JSON.parse(await read_file("steps/total/value.json")) * 2',
        },
      ],
    }
    const plan = await execgate.plans.run(spec)
    const done = await execgate.plans.wait(plan.id, { timeoutMs: 60_000 })
    expect(done.state).toBe('COMPLETED')
    expect(done.steps.map((step) => [step.id, step.result?.value])).toEqual([
      ['total', TOTAL],
      ['double', TOTAL * 2],
    ])
    const theirs = await execgate.plans.run(spec, { tenant: 'globex' })
    const failed = await execgate.plans.wait(theirs.id, { tenant: 'globex', timeoutMs: 60_000 })
    expect(failed.state).toBe('FAILED')
    expect(failed.steps.find((step) => step.id === 'total')?.result?.error?.code).toBe('EXECGATE_FILE_NOT_FOUND')
  }, 120_000)

  test('a persistent sandbox takes the upload by digest, at start and by writeFile, with the ledger off', async () => {
    const sandbox = await execgate.sandboxes.start({ adapter: 'process', files: [{ path: 'in/sales.csv', sha256: DIGEST }] })
    try {
      await sandbox.writeFile('again.csv', { sha256: `sha256:${DIGEST}` })
      const result = await sandbox.exec({ command: 'wc -c < in/sales.csv; cmp in/sales.csv again.csv && echo same' })
      expect(result.stdout.trim().split('\n')).toEqual([String(Buffer.byteLength(CSV)), 'same'])
    } finally {
      await sandbox.stop()
    }
    await expect(
      execgate.sandboxes.start({ adapter: 'process', files: [{ path: 'x.csv', sha256: DIGEST }] }, { tenant: 'globex' }),
    ).rejects.toMatchObject({ code: 'EXECGATE_FILE_NOT_FOUND' })
  }, 120_000)
})

test('a task naming an upload runs after the process that submitted it is gone', async () => {
  // A client-role execgate stores the upload and the task and runs nothing; then it is disposed, and a new one on the
  // same data folder (a restart) runs the task from the SQLite store.
  const submitter = await createExecgate({ warm: false, role: 'client', overrides: overrides(true) })
  let id: string
  try {
    const stored = await submitter.uploads.put('acme', Readable.from([Buffer.from(CSV)]))
    const task = await submitter.tasks.submit(
      { request: { language: 'python', adapter: 'process', code: SUM_CSV, files: [{ path: 'sales.csv', sha256: stored.sha256 }] } },
      { tenant: 'acme' },
    )
    expect(task.state).toBe('PENDING')
    id = task.id
  } finally {
    await submitter.dispose()
  }
  const runner = await createExecgate({ warm: false, overrides: overrides(true) })
  try {
    const done = await runner.tasks.wait(id, { tenant: 'acme', timeoutMs: 60_000 })
    expect(done).toMatchObject({ state: 'COMPLETED', result: { status: 'ok', value: TOTAL } })
    // The run's ledger record lists the upload among its inputs (by digest: the bytes stay in the upload store), so
    // the upload's lineage answers which runs used it; another tenant's lineage of the digest knows nothing.
    const runId = done.result!.runId!
    const record = await runner.ledger.record(runId, { tenant: 'acme' })
    expect(record.record).toMatchObject({
      inputs: [{ path: 'sales.csv', sha256: DIGEST, size: Buffer.byteLength(CSV), mediaType: 'text/csv', upload: true }],
    })
    const lineage = await runner.ledger.lineage(DIGEST, { tenant: 'acme' })
    expect(lineage.descendants.activities.map((activity) => activity.id)).toEqual([runId])
    expect(lineage.descendants.relations).toContainEqual(expect.objectContaining({ relation: 'used', role: 'input' }))
    await expect(runner.ledger.lineage(DIGEST, { tenant: 'globex' })).rejects.toMatchObject({ code: 'EXECGATE_NOT_FOUND' })
  } finally {
    await runner.dispose()
  }
}, 120_000)
