import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../../src'
import { LEDGER_SQLITE_FILE_NAME, SqliteLedgerStore, type RunRecord } from '../../../src/fabric/ledger'
import { canonicalJson, sha256 } from '../../../src/fabric/ledger/run-capture'
import { DEFAULT_POLICY } from '../../../src/policy'

/**
 * A run's record names its resolved policy by digest and the record store keeps each policy's canonical JSON once
 * (src/fabric/ledger/stored-policies.ts). On a real SQLite file and real quickjs runs: what is stored, what every read
 * puts back (record, PROV-JSON, OpenLineage, receipts), records written before with the policy inline, and verify
 * finding a stored policy edited or removed.
 */

const env = (dataDir: string) => ({
  EXECGATE_LOG_LEVEL: 'silent',
  EXECGATE_READINESS_ENABLED: 'false',
  EXECGATE_EXECUTION_ENABLED: 'quickjs',
  EXECGATE_FABRIC_DATA_DIR: dataDir,
})

const dirs: string[] = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-policies-'))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** Runs `use` on the ledger's SQLite file, opened behind the ledger's back. */
function onFile<T>(dir: string, use: (db: { prepare(sql: string): { all(): unknown[]; run(): unknown } }) => T): T {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Database = require('libsql')
  const db = new Database(path.join(dir, LEDGER_SQLITE_FILE_NAME))
  try {
    return use(db)
  } finally {
    db.close()
  }
}

async function withExecgate<T>(dir: string, use: (gate: Execgate) => Promise<T>): Promise<T> {
  const gate = await createExecgate({ env: env(dir), warm: false })
  try {
    return await use(gate)
  } finally {
    await gate.dispose()
  }
}

const receiptPredicate = async (gate: Execgate, runId: string) =>
  JSON.parse(Buffer.from((await gate.ledger.receipt(runId)).payload, 'base64').toString()).predicate

test('a record holds its policy by digest only; the policy is stored once; every read puts it and its limits back', async () => {
  const dir = tempDir()
  await withExecgate(dir, async (gate) => {
    const first = await gate.execute({ language: 'javascript', code: '1' })
    await gate.execute({ language: 'javascript', code: '2' })
    const other = await gate.execute({ language: 'javascript', code: '3', policy: { wallTimeMs: 4000 } })
    await gate.ledger.flush()

    const bodies = onFile(dir, (db) => db.prepare('SELECT body FROM ledger_records ORDER BY seq').all() as { body: string }[])
    expect(bodies).toHaveLength(3)
    for (const { body } of bodies) {
      expect(body).toMatch(/"policySha256":"[0-9a-f]{64}"/)
      expect(body).not.toContain('"policy"')
      expect(body).not.toContain('"limits"')
    }
    const policies = onFile(dir, (db) => db.prepare('SELECT sha256, body FROM ledger_policies').all() as { sha256: string; body: string }[])
    expect(policies).toHaveLength(2)
    for (const policy of policies) expect(sha256(policy.body)).toBe(policy.sha256)

    const { record } = await gate.ledger.record(first.runId!)
    expect(record.policy).toEqual(JSON.parse(canonicalJson(DEFAULT_POLICY)))
    expect(sha256(canonicalJson(record.policy))).toBe(record.policySha256)
    expect(record.limits).toEqual({
      wallTimeMs: 5000,
      cpuTimeMs: 5000,
      memoryMb: 128,
      outputBytes: 65536,
      network: 'none',
      filesystem: 'none',
      maxProcesses: 32,
      hostCalls: { maxCount: 100, maxTotalMs: 2000 },
    })
    const otherRecord = (await gate.ledger.record(other.runId!)).record
    expect(otherRecord.limits?.wallTimeMs).toBe(4000)
    expect(otherRecord.policySha256).not.toBe(record.policySha256)

    expect((await receiptPredicate(gate, first.runId!)).policy).toEqual({
      sha256: record.policySha256,
      resolved: record.policy,
      limits: record.limits,
    })
    const prov = await gate.ledger.export('prov-json')
    expect(prov.activity[`run:${other.runId}`]).toMatchObject({
      'execgate:wallTimeMs': 4000,
      'execgate:policySha256': otherRecord.policySha256,
    })
    const events = await gate.ledger.export('openlineage')
    const facet = events.find((event) => event.run.runId === other.runId)!.run.facets.execgate_run
    expect(facet).toMatchObject({ policySha256: otherRecord.policySha256, limits: { wallTimeMs: 4000 } })
    expect(await gate.ledger.verify()).toMatchObject({ ok: true, records: 3 })
  })
})

test('records written with the policy inline, as before, read, sign and verify as they did beside new ones', async () => {
  const dir = tempDir()
  const policy = { ...DEFAULT_POLICY, memoryMb: 96 }
  const limits = {
    wallTimeMs: 5000,
    cpuTimeMs: 5000,
    memoryMb: 96,
    outputBytes: 65536,
    network: 'none',
    filesystem: 'none',
    maxProcesses: 32,
    hostCalls: { maxCount: 100, maxTotalMs: 2000 },
  }
  const empty = { sha256: sha256(''), size: 0, stored: false }
  const entry = {
    kind: 'run',
    runId: 'written-before',
    traceId: 'written-before',
    tenant: 'local',
    adapter: 'quickjs',
    execgateVersion: 'before',
    code: { path: 'code', sha256: sha256('1'), size: 1, mediaType: 'text/javascript' },
    policySha256: sha256(canonicalJson(policy)),
    limits,
    policy,
    startedAt: new Date().toISOString(),
    endedAt: new Date().toISOString(),
    status: 'ok',
    wallMs: 1,
    inputs: [],
    outputs: [],
    stdout: empty,
    stderr: empty,
  } as unknown as RunRecord
  const store = new SqliteLedgerStore({ file: path.join(dir, LEDGER_SQLITE_FILE_NAME) })
  await store.append([{ tenant: 'local', id: entry.runId, recordedAt: Date.now(), entry }])
  await store.close()

  await withExecgate(dir, async (gate) => {
    const fresh = await gate.execute({ language: 'javascript', code: '1' })
    const { record } = await gate.ledger.record('written-before')
    expect(record.policy).toEqual(policy)
    expect(record.limits).toEqual(limits)
    expect((await receiptPredicate(gate, 'written-before')).policy).toEqual({
      sha256: entry.policySha256,
      resolved: JSON.parse(canonicalJson(policy)),
      limits,
    })
    expect((await receiptPredicate(gate, fresh.runId!)).policy.resolved).toEqual(JSON.parse(canonicalJson(DEFAULT_POLICY)))
    const prov = await gate.ledger.export('prov-json')
    expect(prov.activity['run:written-before']).toMatchObject({ 'execgate:memoryMb': 96 })
    expect(await gate.ledger.verify()).toMatchObject({ ok: true, records: 2 })
  })
  // The old record's policy stays inline; only the new run's went to the policies' table.
  expect(onFile(dir, (db) => db.prepare('SELECT sha256 FROM ledger_policies').all())).toEqual([
    { sha256: sha256(canonicalJson(DEFAULT_POLICY)) },
  ])
})

test('verify finds a stored policy edited, and one removed; a read never answers a policy its digest does not cover', async () => {
  const check = async (change: string) => {
    const dir = tempDir()
    const runs = await withExecgate(dir, async (gate) => [
      await gate.execute({ language: 'javascript', code: '1' }),
      await gate.execute({ language: 'javascript', code: '2' }),
    ])
    onFile(dir, (db) => db.prepare(change).run())
    return withExecgate(dir, async (gate) => ({
      report: await gate.ledger.verify(),
      record: (await gate.ledger.record(runs[0]!.runId!)).record,
    }))
  }
  const edited = await check(`UPDATE ledger_policies SET body = replace(body, '"memoryMb":128', '"memoryMb":4096')`)
  expect(edited.report).toMatchObject({
    ok: false,
    records: 0,
    broken: { seq: 1, reason: expect.stringMatching(/policy [0-9a-f]{64} was edited/) },
  })
  expect(edited.record.policySha256).toMatch(/^[0-9a-f]{64}$/)
  expect(edited.record.policy).toBeUndefined()
  expect(edited.record.limits).toBeUndefined()
  const removed = await check('DELETE FROM ledger_policies')
  expect(removed.report).toMatchObject({ ok: false, records: 0, broken: { seq: 1, reason: expect.stringMatching(/is not stored/) } })
})
