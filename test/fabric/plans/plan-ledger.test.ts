import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate, type PlanStepSpec, type PlanView, type RunRecord } from '../../../src'
import { sha256 } from '../../../src/fabric/ledger/run-capture'
import { FakeConverse } from '../../fakes/converse-server'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'

/**
 * Plans and the artifact ledger together, on real components and both stores: the embedded SQLite stores, or a real
 * redis-server on a loopback port (plans, tasks and the ledger's records on it), with the blob folder in a temp dir;
 * real quickjs runs, and the reflector as Bedrock Converse spoken to by the real SDK client over HTTP/1.1 to a
 * local server with scripted replies. Every version a plan gets is in the ledger, its steps' runs name it, and every
 * artifact of the plan traces back to the code that produced it.
 */

process.env.AWS_ACCESS_KEY_ID = 'AKIDEXECGATETEST'
process.env.AWS_SECRET_ACCESS_KEY = 'execgate-test-secret'

const replies: ConstructorParameters<typeof FakeConverse>[0] = []
const converse = new FakeConverse(replies)
let converseUrl: Promise<string> | undefined
const reflectorUrl = () => (converseUrl ??= converse.listen())
afterAll(() => converse.close())

// Both stores always: without redis-server the Redis half fails with the command that installs it (never skipped).
describe.each(['sqlite', 'redis'] as const)('%s store', (storeKind) => {
  let dataDir: string
  let execgate: Execgate
  let redis: RedisServer | undefined

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-plan-ledger-'))
    if (storeKind === 'redis') redis = await startRedisServer()
    const endpoint = await reflectorUrl()
    execgate = await createExecgate({
      overrides: {
        execution: { enabled: ['quickjs'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: {
          ...(redis ? { store: 'redis' as const, redisUrl: redis.url } : {}),
          dataDir,
          plans: { reflector: { modelId: 'anthropic.claude-3-5-haiku-20241022-v1:0', endpoint } },
        },
      },
    })
  }, 60_000)

  afterAll(async () => {
    await execgate.dispose()
    await redis?.stop()
    redis = undefined
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  const js = (id: string, code: string, dependsOn?: string[]): PlanStepSpec => ({
    id,
    language: 'javascript',
    code,
    ...(dependsOn ? { dependsOn } : {}),
  })

  const BASE = 'await write_file("note.txt", "ten"); 10'
  const BROKEN = 'const n = JSON.parse(await read_file("steps/base/value.json")); twice(n)'
  const FIXED =
    'const n = JSON.parse(await read_file("steps/base/value.json")); const word = await ' +
    'read_file("steps/base/files/note.txt"); await write_file("double.txt", word + " twice"); ' +
    'n * 2'
  const REPORT =
    'const d = await read_file("steps/double/files/double.txt"); await ' +
    'write_file("report.txt", d + "!"); JSON.parse(await read_file("steps/double/value.json")) ' +
    '+ 1'

  /** Runs a plan whose second step fails in version 1 and is fixed by the scripted reflector in version 2. */
  async function revisedPlan(): Promise<PlanView> {
    replies.push(JSON.stringify({ note: 'twice does not exist', steps: [js('double', FIXED, ['base']), js('report', REPORT, ['double'])] }))
    const plan = await execgate.plans.run({
      goal: 'twice ten, plus one',
      steps: [js('base', BASE), js('double', BROKEN, ['base']), js('report', REPORT, ['double'])],
    })
    const done = await execgate.plans.wait(plan.id, { timeoutMs: 60_000 })
    expect(done).toMatchObject({ state: 'COMPLETED', version: 2 })
    return done
  }

  async function recordOf(done: PlanView, stepId: string): Promise<RunRecord> {
    const step = done.steps.find((item) => item.id === stepId)!
    const runId = step.result!.runId!
    return (await execgate.ledger.record(runId)).record
  }

  test('a step run of version 2 names its version; version 2 is a revision of version 1 in PROV-JSON', async () => {
    const done = await revisedPlan()
    const double = await recordOf(done, 'double')
    expect(double).toMatchObject({ planId: done.id, planVersion: 2, stepId: 'double', taskId: done.steps[1]!.taskId })
    expect(double.planDocument).toMatchObject({ path: `plan-${done.id}-v2.json`, mediaType: 'application/json' })
    // The version's document is the plan as that version held it: the fixed step's code is in it, the broken one's is not.
    const document = JSON.parse((await execgate.ledger.artifact(double.planDocument!.sha256)).content.toString('utf8')) as {
      planId: string
      version: number
      steps: PlanStepSpec[]
      changes: unknown
    }
    expect(document).toMatchObject({ planId: done.id, version: 2, changes: { changed: ['double'], reused: ['base'] } })
    expect(document.steps.map((step) => step.code)).toEqual([BASE, FIXED, REPORT])

    const prov = await execgate.ledger.provenance(double.runId)
    const planEntity = `sha256:${double.planDocument!.sha256}`
    expect(prov.entity[planEntity]).toMatchObject({
      'prov:type': { $: 'prov:Plan' },
      'execgate:planId': done.id,
      'execgate:planVersion': 2,
    })
    expect(Object.values(prov.wasAssociatedWith)).toContainEqual(
      expect.objectContaining({ 'prov:activity': `run:${double.runId}`, 'prov:plan': planEntity }),
    )
    const revision = Object.values(prov.wasDerivedFrom).find((relation) => relation['prov:generatedEntity'] === planEntity)
    expect(revision).toMatchObject({ 'prov:type': { $: 'prov:Revision' } })
    const previous = prov.entity[revision!['prov:usedEntity'] as string]
    expect(previous).toMatchObject({ 'execgate:planId': done.id, 'execgate:planVersion': 1 })

    // Version 1's run of the same step (the failed one) names version 1's document, the one version 2 revises.
    const v1Step = done.versions[0]!.steps.find((step) => step.id === 'double')!
    const failedRun = (await execgate.tasks.get(v1Step.taskId))!.result!.runId!
    const failed = (await execgate.ledger.record(failedRun)).record
    expect(failed).toMatchObject({ planVersion: 1, status: 'error' })
    expect(`sha256:${failed.planDocument!.sha256}`).toBe(revision!['prov:usedEntity'])

    // The whole chain of the tenant's records is intact with the plan versions in it.
    expect(await execgate.ledger.verify()).toMatchObject({ ok: true })
    const exported = await execgate.ledger.export('prov-json')
    expect(
      Object.values(exported.wasDerivedFrom).filter(
        (relation) => relation['prov:generatedEntity'] === planEntity && (relation['prov:type'] as { $: string })?.$ === 'prov:Revision',
      ),
    ).toHaveLength(1)
  })

  test("every artifact of a plan traces back to the code that produced it, step one's output included", async () => {
    const done = await revisedPlan()
    const records = new Map<string, RunRecord>()
    for (const step of ['base', 'double', 'report']) records.set(step, await recordOf(done, step))
    // Step one ran once, in version 1, and its run is the one version 2 kept.
    expect(records.get('base')).toMatchObject({ planVersion: 1, stepId: 'base' })
    expect(done.steps[0]).toMatchObject({ reusedFrom: 1 })

    // A dependent's run used what its dependencies produced: their files and values are its inputs, byte for byte.
    const double = records.get('double')!
    const inputs = new Map(double.inputs.map((input) => [input.path, input.sha256]))
    expect(inputs.get('steps/base/files/note.txt')).toBe(sha256('ten'))
    expect(inputs.get('steps/base/value.json')).toBe(records.get('base')!.value!.sha256)
    expect(new Map(records.get('report')!.inputs.map((input) => [input.path, input.sha256])).get('steps/double/files/double.txt')).toBe(
      sha256('ten twice'),
    )

    for (const [stepId, record] of records) {
      const artifacts = [...record.outputs.map((output) => output.sha256), record.value!.sha256]
      expect(artifacts.length).toBeGreaterThan(1)
      for (const artifact of artifacts) {
        const lineage = await execgate.ledger.lineage(artifact)
        const producer = lineage.ancestors.activities.find((activity) => activity.id === record.runId)
        expect({ stepId, artifact, producer }).toEqual({
          stepId,
          artifact,
          producer: expect.objectContaining({ stepId, codeSha256: record.code.sha256 }),
        })
        expect(lineage.ancestors.relations).toContainEqual({
          relation: 'used',
          activity: record.runId,
          entity: record.code.sha256,
          role: 'code',
        })
        // The step's code is the code the plan gave it.
        const code = (await execgate.ledger.artifact(record.code.sha256)).content.toString('utf8')
        expect(done.steps.find((step) => step.id === stepId)!.code).toBe(code)
      }
    }

    // The report's file goes back through both steps to step one's code.
    const report = records.get('report')!
    const lineage = await execgate.ledger.lineage(report.outputs.find((output) => output.path === 'report.txt')!.sha256)
    const reached = lineage.ancestors.activities.map((activity) => activity.id)
    expect(reached).toEqual(expect.arrayContaining([report.runId, double.runId, records.get('base')!.runId]))
    // And step one's file leads forward to the runs that read it.
    const forward = await execgate.ledger.lineage(sha256('ten'))
    expect(forward.descendants.activities.map((activity) => activity.id)).toEqual(expect.arrayContaining([double.runId, report.runId]))
  })
})
