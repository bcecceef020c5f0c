import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../../src'
import { sha256 } from '../../../src/fabric/ledger/run-capture'

/**
 * Retention on a real ledger (SQLite records, a blob folder): by age and by bytes per tenant, only ever the oldest
 * records of a chain, which still verifies from its checkpoint afterwards; and a blob goes only when no kept record of
 * any tenant references it (a newer run of the same tenant, or another tenant that produced the same bytes).
 */

let dataDir: string
let execgate: Execgate
const blobFile = (digest: string) => path.join(dataDir, 'blobs', digest.slice(0, 2), digest)
const write = (file: string, content: string) => `await write_file(${JSON.stringify(file)}, ${JSON.stringify(content)}); null`

beforeEach(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-retention-'))
  execgate = await createExecgate({
    env: {
      EXECGATE_LOG_LEVEL: 'silent',
      EXECGATE_READINESS_ENABLED: 'false',
      EXECGATE_EXECUTION_ENABLED: 'quickjs',
      EXECGATE_FABRIC_DATA_DIR: dataDir,
      EXECGATE_SECURITY_DEFAULT_POLICY_FILESYSTEM: 'sandboxed',
    },
  })
})
afterEach(async () => {
  await execgate.dispose()
  fs.rmSync(dataDir, { recursive: true, force: true })
})

test('by age: old records go, a blob a kept record (or another tenant) still references stays, the chain still verifies', async () => {
  const old = await execgate.execute({
    language: 'javascript',
    code: write('a.txt', 'shared by content') + '; ' + write('b.txt', 'only the old run') + '; ' + write('c.txt', 'also made by tenant b'),
  })
  const otherTenant = await execgate.execute({ language: 'javascript', code: write('c.txt', 'also made by tenant b') }, { tenant: 'b' })
  await execgate.ledger.flush()
  await new Promise((resolve) => setTimeout(resolve, 20))
  const cutoff = Date.now()
  await new Promise((resolve) => setTimeout(resolve, 20))
  const kept = await execgate.execute({ language: 'javascript', code: write('again.txt', 'shared by content') })
  await execgate.ledger.flush()
  const report = await execgate.ledger.applyRetention({
    policy: { maxAgeDays: 1, maxBytesPerTenant: 0 },
    now: cutoff + 86_400_000,
    tenant: 'local',
  })
  expect(report.tenants).toEqual([
    expect.objectContaining({ tenant: 'local', removedRecords: 1, checkpoint: { seq: 1, hash: expect.any(String) } }),
  ])
  // The old run's own file and its code are gone; the shared file (kept run) and tenant b's file stay.
  expect(report.removedBlobs).toEqual(expect.arrayContaining([sha256('only the old run')]))
  expect(report.removedBlobs).not.toContain(sha256('shared by content'))
  expect(report.removedBlobs).not.toContain(sha256('also made by tenant b'))
  expect(fs.existsSync(blobFile(sha256('only the old run')))).toBe(false)
  expect(fs.existsSync(blobFile(sha256('shared by content')))).toBe(true)
  expect(fs.existsSync(blobFile(sha256('also made by tenant b')))).toBe(true)
  await expect(execgate.ledger.record(old.runId!)).rejects.toMatchObject({ code: 'EXECGATE_NOT_FOUND' })
  expect((await execgate.ledger.artifact(sha256('shared by content'))).content.toString()).toBe('shared by content')
  // Tenant b's file is b's, through b's own record: local no longer has a record naming it.
  await expect(execgate.ledger.artifact(sha256('also made by tenant b'))).rejects.toMatchObject({ code: 'EXECGATE_NOT_FOUND' })
  expect((await execgate.ledger.artifact(sha256('also made by tenant b'), { tenant: 'b' })).content.toString()).toBe(
    'also made by tenant b',
  )
  expect((await execgate.ledger.record(otherTenant.runId!, { tenant: 'b' })).seq).toBe(1)
  expect(await execgate.ledger.verify()).toMatchObject({ ok: true, records: 1, checkpoint: { seq: 1 } })
  // The chain goes on from its head.
  const next = await execgate.execute({ language: 'javascript', code: '1' })
  expect((await execgate.ledger.record(next.runId!)).seq).toBe(3)
  expect((await execgate.ledger.record(kept.runId!)).seq).toBe(2)
  expect(await execgate.ledger.verify()).toMatchObject({ ok: true, records: 2 })
})

test('by bytes per tenant: the oldest records go until what the kept ones reference fits', async () => {
  const big = 'x'.repeat(20_000)
  const runs = []
  for (let i = 0; i < 30; i++) runs.push(await execgate.execute({ language: 'javascript', code: write(`f${i}.txt`, `${i}:${big}`) }))
  const report = await execgate.ledger.applyRetention({ policy: { maxAgeDays: 0, maxBytesPerTenant: 150_000 } })
  const [local] = report.tenants
  // Each run references ~40 kB (its file and its code, which holds the file's text): three fit, the 27 oldest go.
  expect(local!.bytes).toBeLessThanOrEqual(150_000)
  expect(local!.removedRecords).toBe(27)
  // Every kept record's artifacts are all still there; the newest run is kept.
  const { record } = await execgate.ledger.record(runs[29]!.runId!)
  expect((await execgate.ledger.artifact(record.outputs[0]!.sha256)).size).toBe(record.outputs[0]!.size)
  expect(fs.existsSync(blobFile(sha256(`0:${big}`)))).toBe(false)
  expect(await execgate.ledger.verify()).toMatchObject({ ok: true, records: 30 - local!.removedRecords })
})
