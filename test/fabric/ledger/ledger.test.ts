import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate, type ExecutionResult } from '../../../src'
import { EXECGATE_VERSION } from '../../../src/config/version'
import { LEDGER_SQLITE_FILE_NAME, type Lineage } from '../../../src/fabric/ledger'
import { sha256 } from '../../../src/fabric/ledger/run-capture'

/**
 * The artifact ledger end to end on the embedded default (a real SQLite file and blob folder in a temp dir, real runs
 * on quickjs and monty): what a record holds, run ids, task chains traced back to their code, retried attempts,
 * plan versions, PROV-JSON and OpenLineage, tampering found by verify, and nothing lost across a restart.
 */

const env = (dataDir: string) => ({
  EXECGATE_LOG_LEVEL: 'silent',
  EXECGATE_READINESS_ENABLED: 'false',
  EXECGATE_EXECUTION_ENABLED: 'quickjs,monty',
  EXECGATE_FABRIC_DATA_DIR: dataDir,
  EXECGATE_SECURITY_DEFAULT_POLICY_FILESYSTEM: 'sandboxed',
})

const dirs: string[] = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-ledger-'))
  dirs.push(dir)
  return dir
}

let dataDir: string
let execgate: Execgate
beforeAll(async () => {
  dataDir = tempDir()
  execgate = await createExecgate({ env: env(dataDir) })
})
afterAll(async () => {
  await execgate.dispose()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** Every run and artifact reachable upward from an artifact. */
function ancestorsOf(lineage: Lineage) {
  return {
    runs: lineage.ancestors.activities.map((activity) => activity.id),
    artifacts: lineage.ancestors.entities.map((entity) => entity.sha256),
  }
}

test("a run's record: who, where, under which policy, when, with which inputs and outputs, and no code or output in it", async () => {
  const code =
    `const text = await read_file('in.txt'); await write_file('out/summary.json', ` +
    `JSON.stringify({ words: text.split(' ').length })); console.error('note'); 42`
  const result = await execgate.execute(
    { language: 'javascript', code, files: [{ path: 'in.txt', content: 'one two three' }], agentType: 'research', stdin: 'ignored' },
    { tenant: 'acme' },
  )
  expect(result).toMatchObject({ status: 'ok', value: 42 })
  expect(result.runId).toMatch(/^[0-9a-f-]{36}$/)
  const { record, seq, prevHash } = await execgate.ledger.record(result.runId!, { tenant: 'acme' })
  expect(seq).toBe(1)
  expect(prevHash).toBe('')
  expect(record).toMatchObject({
    kind: 'run',
    runId: result.runId,
    traceId: result.traceId,
    tenant: 'acme',
    agentType: 'research',
    lane: 'batch',
    language: 'javascript',
    adapter: 'quickjs',
    tier: 1,
    execgateVersion: EXECGATE_VERSION,
    code: { path: 'code', sha256: sha256(code), size: Buffer.byteLength(code), mediaType: 'text/javascript' },
    limits: { wallTimeMs: 5000, memoryMb: 128, filesystem: 'sandboxed', network: 'none' },
    status: 'ok',
    inputs: [{ path: 'in.txt', sha256: sha256('one two three'), size: 13, mediaType: 'text/plain' }],
    outputs: [{ path: 'out/summary.json', sha256: sha256('{"words":3}'), size: 11, mediaType: 'application/json' }],
    stdin: { sha256: sha256('ignored'), size: 7 },
    stdout: { sha256: sha256(''), size: 0, stored: false },
    stderr: { sha256: sha256('note\n'), size: 5, stored: false },
    value: { sha256: sha256('42'), size: 2 },
  })
  expect(record.policySha256).toMatch(/^[0-9a-f]{64}$/)
  expect(Date.parse(record.endedAt)).toBeGreaterThanOrEqual(Date.parse(record.startedAt))
  expect(record.wallMs).toBeGreaterThan(0)
  // Digests only: the code and the files are artifacts, never part of the record.
  const body = JSON.stringify(record)
  expect(body).not.toContain('one two three')
  expect(body).not.toContain('read_file')
  // Another tenant, or the default one, has no such run.
  await expect(execgate.ledger.record(result.runId!)).rejects.toMatchObject({ code: 'EXECGATE_NOT_FOUND' })
})

test('every call is its own run, whatever traceId the caller sends; refused requests are recorded too', async () => {
  const first = await execgate.execute({ language: 'javascript', code: '1', traceId: 'same-trace' })
  const again = await execgate.execute({ language: 'javascript', code: '1', traceId: 'same-trace' })
  expect(first.runId).not.toBe(again.runId)
  expect((await execgate.ledger.record(first.runId!)).record.traceId).toBe('same-trace')
  expect((await execgate.ledger.record(again.runId!)).record.traceId).toBe('same-trace')
  const invalid = await execgate.execute({ language: 'cobol', code: 'x' } as never)
  expect(invalid.status).toBe('invalid_request')
  const { record } = await execgate.ledger.record(invalid.runId!)
  expect(record).toMatchObject({ status: 'invalid_request', adapter: 'execgate', error: { code: 'EXECGATE_REQUEST_INVALID' } })
  expect(record.policySha256).toBeUndefined()
  expect(record.language).toBeUndefined()
})

test("a task chain: the file task 2 wrote traces back through task 1's file to the code of both", async () => {
  const producer = `await write_file('numbers.txt', '3 4 5'); 'written'`
  const consumer =
    `const numbers = (await read_file('deps/t-produce/files/numbers.txt')).split(' ` +
    `').map(Number); await write_file('total.txt', String(numbers.reduce((a, b) => a + b))); ` +
    `'summed'`
  await execgate.tasks.submitMany([
    { id: 't-produce', request: { language: 'javascript', code: producer } },
    { id: 't-consume', request: { language: 'javascript', code: consumer }, dependencies: ['t-produce'] },
  ])
  const done = await execgate.tasks.wait('t-consume', { timeoutMs: 30_000 })
  expect(done.state).toBe('COMPLETED')
  const produced = (await execgate.tasks.get('t-produce'))!
  const { record: second } = await execgate.ledger.record(done.result!.runId!)
  expect(second).toMatchObject({ taskId: 't-consume', attempt: 1 })
  const total = second.outputs.find((output) => output.path === 'total.txt')!
  expect(total.sha256).toBe(sha256('12'))
  const lineage = await execgate.ledger.lineage(total.sha256)
  const { runs, artifacts } = ancestorsOf(lineage)
  expect(runs).toEqual([done.result!.runId, produced.result!.runId])
  // The file task 2 read is the bytes task 1 wrote (one artifact), and both programs are there.
  expect(artifacts).toEqual(expect.arrayContaining([sha256('3 4 5'), sha256(consumer), sha256(producer)]))
  expect(lineage.ancestors.relations).toEqual(
    expect.arrayContaining([
      { relation: 'wasGeneratedBy', activity: done.result!.runId, entity: total.sha256, role: 'output' },
      { relation: 'used', activity: done.result!.runId, entity: sha256('3 4 5'), role: 'input' },
      { relation: 'wasGeneratedBy', activity: produced.result!.runId, entity: sha256('3 4 5'), role: 'output' },
      { relation: 'used', activity: produced.result!.runId, entity: sha256(producer), role: 'code' },
    ]),
  )
  // Downward from task 1's file: task 2's run and what it made.
  const below = await execgate.ledger.lineage(sha256('3 4 5'))
  expect(below.descendants.activities.map((activity) => activity.id)).toEqual([done.result!.runId])
  expect(below.descendants.entities.map((entity) => entity.sha256)).toEqual(expect.arrayContaining([total.sha256, sha256('"summed"')]))
})

test("a file a session's call read from its workspace is an input, linked to the earlier call that wrote it", async () => {
  const wrote = await execgate.execute({
    language: 'javascript',
    code: `await write_file('draft.txt', 'v1'); 1`,
    sessionId: 'ledger-session',
  })
  const read = await execgate.execute({
    language: 'javascript',
    code: `(await read_file('draft.txt')).length`,
    sessionId: 'ledger-session',
  })
  expect(read).toMatchObject({ status: 'ok', value: 2 })
  const { record } = await execgate.ledger.record(read.runId!)
  expect(record.inputs).toEqual([{ path: 'draft.txt', sha256: sha256('v1'), size: 2, mediaType: 'text/plain' }])
  const lineage = await execgate.ledger.lineage(record.value!.sha256)
  expect(lineage.ancestors.activities.map((activity) => activity.id)).toEqual(expect.arrayContaining([read.runId, wrote.runId]))
})

test("each attempt of a retried task is its own record; the task's result names the last", async () => {
  const task = await execgate.tasks.submit({
    request: { language: 'python', code: 'raise ValueError("not yet")' },
    retryPolicy: { maxAttempts: 2, retryOn: ['error'], baseDelayMs: 10, jitter: false },
  })
  const failed = await execgate.tasks.wait(task.id, { timeoutMs: 30_000 })
  expect(failed).toMatchObject({ state: 'FAILED', attempts: 2 })
  const exported = await execgate.ledger.export('openlineage')
  const attempts = exported.filter((event) => (event.run.facets.execgate_run as { taskId?: string }).taskId === task.id)
  expect(attempts.map((event) => (event.run.facets.execgate_run as { attempt: number }).attempt)).toEqual([1, 2])
  expect(new Set(attempts.map((event) => event.run.runId)).size).toBe(2)
  expect(attempts[1]!.run.runId).toBe(failed.result!.runId)
  expect(attempts[1]).toMatchObject({
    eventType: 'FAIL',
    job: { namespace: 'execgate://local', name: `task.${task.id}` },
    run: { facets: { errorMessage: { message: 'ValueError' } } },
  })
})

test("plan versions: a step's run is associated with its version's document, which is a revision of the one before", async () => {
  const v1 = await execgate.ledger.recordPlanVersion({
    planId: 'p-1',
    version: 1,
    document: { steps: [{ id: 'a', code: 'fails()' }] },
    reason: 'submitted',
  })
  const v2 = await execgate.ledger.recordPlanVersion({
    planId: 'p-1',
    version: 2,
    previousVersion: 1,
    document: { steps: [{ id: 'a', code: '2 + 2' }] },
    reason: 'revised after step a failed',
  })
  expect(v2.id).toBe('plan:p-1@2')
  const step = await execgate.execute(
    { language: 'javascript', code: '2 + 2' },
    { provenance: { planId: 'p-1', planVersion: 2, stepId: 'a' } },
  )
  const { record } = await execgate.ledger.record(step.runId!)
  expect(record).toMatchObject({ planId: 'p-1', planVersion: 2, stepId: 'a', planDocument: { sha256: v2.document.sha256 } })
  const prov = await execgate.ledger.provenance(step.runId!)
  const associations = Object.values(prov.wasAssociatedWith)
  expect(associations).toEqual([
    { 'prov:activity': `run:${step.runId}`, 'prov:agent': 'adapter:quickjs', 'prov:plan': `sha256:${v2.document.sha256}` },
  ])
  expect(Object.values(prov.wasDerivedFrom)).toEqual(
    expect.arrayContaining([
      {
        'prov:generatedEntity': `sha256:${v2.document.sha256}`,
        'prov:usedEntity': `sha256:${v1.document.sha256}`,
        'prov:type': { $: 'prov:Revision', type: 'xsd:QName' },
      },
    ]),
  )
  const lineage = await execgate.ledger.lineage(record.value!.sha256)
  expect(lineage.ancestors.activities.map((activity) => activity.id)).toEqual(expect.arrayContaining([step.runId, 'plan:p-1@2']))
  expect(lineage.ancestors.entities.map((entity) => entity.sha256)).toEqual(
    expect.arrayContaining([v2.document.sha256, v1.document.sha256]),
  )
})

test('a queued plan version is written with the runs after it, ahead of them, once however often it is queued', async () => {
  const document = { steps: [{ id: 'a', code: '6 * 7' }] }
  const before = await execgate.ledger.verify()
  await execgate.ledger.queuePlanVersion({ planId: 'p-queued', version: 1, document, reason: 'submitted' })
  await execgate.ledger.queuePlanVersion({ planId: 'p-queued', version: 1, document, reason: 'submitted' })
  // Nothing waited for a write: the step's run is heard right after, in the same batch.
  const step = await execgate.execute(
    { language: 'javascript', code: '6 * 7' },
    { provenance: { planId: 'p-queued', planVersion: 1, stepId: 'a' } },
  )
  const { record } = await execgate.ledger.record(step.runId!)
  const version = await execgate.ledger.recordPlanVersion({ planId: 'p-queued', version: 1, document, reason: 'submitted' })
  expect(record).toMatchObject({ planId: 'p-queued', planVersion: 1, planDocument: { sha256: version.document.sha256 } })
  // One record for the version (queued twice, recorded a third time) and one for the run; the chain still verifies.
  expect(await execgate.ledger.verify()).toMatchObject({ ok: true, records: before.records + 2 })
  await expect(execgate.ledger.queuePlanVersion({ planId: '', version: 1, document, reason: 'x' })).rejects.toMatchObject({
    code: 'EXECGATE_REQUEST_INVALID',
  })
})

test('PROV-JSON of a run: activity, entities, agents and the PROV relations between them', async () => {
  const result = await execgate.execute({
    language: 'javascript',
    code: `await write_file('b.txt', (await read_file('a.txt')).toUpperCase())`,
    files: [{ path: 'a.txt', content: 'abc' }],
  })
  const prov = await execgate.ledger.provenance(result.runId!)
  const run = `run:${result.runId}`
  expect(prov.prefix).toMatchObject({ run: 'urn:execgate:run:', sha256: 'urn:sha256:' })
  expect(prov.activity[run]).toMatchObject({
    'prov:startTime': expect.any(String),
    'prov:endTime': expect.any(String),
    'execgate:status': 'ok',
    'execgate:adapter': 'quickjs',
  })
  expect(prov.agent['adapter:quickjs']).toMatchObject({ 'prov:type': { $: 'prov:SoftwareAgent', type: 'xsd:QName' } })
  const [a, b] = [`sha256:${sha256('abc')}`, `sha256:${sha256('ABC')}`]
  expect(prov.entity[b]).toMatchObject({ 'prov:label': 'b.txt', 'execgate:size': 3 })
  expect(Object.values(prov.used)).toEqual(expect.arrayContaining([{ 'prov:activity': run, 'prov:entity': a, 'prov:role': 'input' }]))
  // The file, and the value (write_file answers the bytes written).
  expect(Object.values(prov.wasGeneratedBy)).toEqual([
    { 'prov:entity': b, 'prov:activity': run, 'prov:time': expect.any(String) },
    { 'prov:entity': `sha256:${sha256('3')}`, 'prov:activity': run, 'prov:time': expect.any(String) },
  ])
  expect(Object.values(prov.wasDerivedFrom)).toEqual(
    expect.arrayContaining([{ 'prov:generatedEntity': b, 'prov:usedEntity': a, 'prov:activity': run }]),
  )
  expect(Object.values(prov.actedOnBehalfOf)).toEqual([
    { 'prov:delegate': 'adapter:quickjs', 'prov:responsible': 'tenant:local', 'prov:activity': run },
  ])
})

test('a run that fell back to another adapter is one record naming both', async () => {
  const { QuickJsAdapter } = await import('../../../adapters/quickjs')
  const { SwitchableAdapter } = await import('../../routing/fakes')
  const remote = new SwitchableAdapter('remote', new QuickJsAdapter(), 1)
  remote.down = true
  const local = new QuickJsAdapter()
  const gate = await createExecgate({ adapters: [remote, local], env: { ...env(tempDir()), EXECGATE_EXECUTION_FALLBACK: 'quickjs' } })
  try {
    const result = await gate.execute({ language: 'javascript', code: '6 * 7' })
    expect(result).toMatchObject({ status: 'ok', adapter: 'quickjs', fallbackFrom: { adapter: 'remote' } })
    const { record } = await gate.ledger.record(result.runId!)
    expect(record).toMatchObject({ adapter: 'quickjs', fallbackFrom: { adapter: 'remote' }, status: 'ok' })
    expect((await gate.ledger.verify()).records).toBe(1)
  } finally {
    await gate.dispose()
  }
})

async function filledLedger(runs: number): Promise<{ dir: string; results: ExecutionResult[] }> {
  const dir = tempDir()
  const gate = await createExecgate({ env: env(dir) })
  const results = await Promise.all(
    Array.from({ length: runs }, (_, i) => gate.execute({ language: 'javascript', code: `await write_file('n.txt', '${i}'); ${i}` })),
  )
  // No flush, no query: dispose alone must leave every record on disk.
  await gate.dispose()
  return { dir, results }
}

test('nothing recorded is lost across a restart: records heard before dispose are there after reopening', async () => {
  const { dir, results } = await filledLedger(40)
  const reopened = await createExecgate({ env: env(dir), warm: false })
  try {
    for (const [i, result] of results.entries()) {
      const { record } = await reopened.ledger.record(result.runId!)
      expect(record.value!.sha256).toBe(sha256(String(i)))
      expect((await reopened.ledger.artifact(record.outputs[0]!.sha256)).content.toString()).toBe(String(i))
    }
    expect(await reopened.ledger.verify()).toMatchObject({ ok: true, records: 40 })
  } finally {
    await reopened.dispose()
  }
})

test('verify finds a record edited in the SQLite file, and one deleted from it', async () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Database = require('libsql')
  const edit = async (sql: string) => {
    const { dir, results } = await filledLedger(5)
    const db = new Database(path.join(dir, LEDGER_SQLITE_FILE_NAME))
    db.prepare(sql).run()
    db.close()
    const reopened = await createExecgate({ env: env(dir), warm: false })
    try {
      return { report: await reopened.ledger.verify(), results }
    } finally {
      await reopened.dispose()
    }
  }
  const edited = await edit(`UPDATE ledger_records SET body = replace(body, '"status":"ok"', '"status":"error"') WHERE seq = 3`)
  expect(edited.report).toMatchObject({ ok: false, records: 2, broken: { seq: 3, reason: expect.stringMatching(/edited/) } })
  const deleted = await edit('DELETE FROM ledger_records WHERE seq = 2')
  expect(deleted.report).toMatchObject({ ok: false, records: 1, broken: { seq: 2, reason: expect.stringMatching(/record 2 is missing/) } })
})
