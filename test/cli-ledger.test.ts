import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { sha256 } from '../src/fabric/ledger/run-capture'

/** `execgate ledger …`, the real built CLI over the ledger a real `execgate run` recorded (SQLite and a blob folder in a temp dir). */
const root = path.join(__dirname, '..')
const bin = path.join(root, 'bin', 'execgate.js')
let dataDir: string
let env: Record<string, string>

function execgate(args: string[]) {
  const child = spawnSync(process.execPath, [bin, ...args], { cwd: dataDir, encoding: 'utf8', env, timeout: 60_000 })
  return { code: child.status, stdout: child.stdout, stderr: child.stderr }
}

beforeAll(() => {
  if (!fs.existsSync(path.join(root, 'dist', 'src', 'cli', 'ledger.js')))
    throw new Error('dist/ is missing: run `npm run build` (npm test does)')
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-cli-ledger-'))
  env = {
    PATH: process.env.PATH ?? '',
    EXECGATE_FABRIC_DATA_DIR: path.join(dataDir, 'store'),
    EXECGATE_EXECUTION_ENABLED: 'quickjs',
    EXECGATE_LOG_LEVEL: 'silent',
  }
  fs.writeFileSync(
    path.join(dataDir, 'summary.js'),
    `const rows = (await read_file('sales.csv')).trim().split('\\n').slice(1); await ` +
      `write_file('total.txt', String(rows.length)); rows.length`,
  )
  fs.mkdirSync(path.join(dataDir, 'data'))
  fs.writeFileSync(path.join(dataDir, 'data', 'sales.csv'), 'region,amount\nnorth,10\nsouth,20\n')
})
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }))

test('run, then provenance, lineage, artifact, export and verify of what it recorded; an edit makes verify exit 1', () => {
  const run = execgate(['run', 'summary.js', '--workspace', 'data', '--json'])
  expect(run.code).toBe(0)
  const { runId } = JSON.parse(run.stdout) as { runId: string }
  expect(execgate(['run', 'summary.js', '--workspace', 'data']).stdout).toMatch(/^run id: [0-9a-f-]{36}$/m)

  const prov = execgate(['ledger', 'provenance', runId])
  expect(prov.code).toBe(0)
  expect(JSON.parse(prov.stdout).activity[`run:${runId}`]).toMatchObject({ 'execgate:status': 'ok', 'execgate:adapter': 'quickjs' })

  const total = sha256('2')
  const lineage = execgate(['ledger', 'lineage', total])
  expect(lineage.code).toBe(0)
  expect(lineage.stdout).toContain(`run ${runId}`)
  expect(lineage.stdout).toMatch(/used input [0-9a-f]{12} sales\.csv/)
  expect(lineage.stdout).toMatch(/used code [0-9a-f]{12} code/)
  expect(JSON.parse(execgate(['ledger', 'lineage', total, '--json']).stdout).artifact.sha256).toBe(total)

  expect(execgate(['ledger', 'artifact', sha256('region,amount\nnorth,10\nsouth,20\n')]).stdout).toBe('region,amount\nnorth,10\nsouth,20\n')

  const events = execgate(['ledger', 'export', '--format', 'openlineage'])
    .stdout.trim()
    .split('\n')
    .map((line) => JSON.parse(line))
  expect(events).toHaveLength(2)
  expect(events[0]).toMatchObject({ eventType: 'COMPLETE', run: { runId } })
  expect(Object.keys(JSON.parse(execgate(['ledger', 'export', '--format', 'prov-json']).stdout).activity)).toHaveLength(2)

  const verified = execgate(['ledger', 'verify'])
  expect(verified).toMatchObject({ code: 0, stdout: expect.stringMatching(/^local: ok, 2 record\(s\), head 2 [0-9a-f]{64}/) })

  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Database = require('libsql')
  const db = new Database(path.join(dataDir, 'store', 'ledger.sqlite'))
  db.prepare(`UPDATE ledger_records SET body = replace(body, '"status":"ok"', '"status":"error"') WHERE seq = 1`).run()
  db.close()
  const broken = execgate(['ledger', 'verify', '--all'])
  expect(broken.code).toBe(1)
  expect(broken.stdout).toMatch(/local: BROKEN at record 1 .*edited/)
})

test('a run id or digest the tenant has no record of is an error naming it', () => {
  const missing = execgate(['ledger', 'provenance', 'no-such-run'])
  expect(missing.code).toBe(2)
  expect(missing.stderr).toContain('no run "no-such-run" for tenant local')
  expect(execgate(['ledger', 'lineage', 'xyz']).stderr).toContain('64 hexadecimal characters')
})

test('ledger receipt, public-key and verify-receipt: the receipt of a CLI run verifies offline with the printed key', () => {
  const run = execgate(['run', 'summary.js', '--workspace', 'data', '--json'])
  const { runId } = JSON.parse(run.stdout) as { runId: string }
  const receiptFile = path.join(dataDir, 'receipt.json')
  expect(execgate(['ledger', 'receipt', runId, '--out', receiptFile]).code).toBe(0)
  const key = execgate(['ledger', 'public-key'])
  expect(key.stdout).toMatch(/^-----BEGIN PUBLIC KEY-----\n/)
  fs.writeFileSync(path.join(dataDir, 'key.pem'), key.stdout)
  expect(JSON.parse(execgate(['ledger', 'public-key', '--json']).stdout).keyid).toMatch(/^[0-9a-f]{64}$/)
  // Generated into fabric.dataDir at the first receipt, mode 0600.
  expect(fs.statSync(path.join(dataDir, 'store', 'ledger-signing-key.pem')).mode & 0o777).toBe(0o600)

  const verified = execgate(['ledger', 'verify-receipt', receiptFile, '--key', 'key.pem'])
  expect(verified.code).toBe(0)
  expect(verified.stdout).toContain(`ok: run ${runId} (ok on quickjs, tenant local`)
  expect(verified.stdout).toContain(`${sha256('2')}  files/total.txt`)
  // Another tenant has no such run.
  expect(execgate(['ledger', 'receipt', runId, '--tenant', 'acme']).stderr).toContain(`no run "${runId}" for tenant acme`)
})
