import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, isExecgateError, type Execgate, type PlanStepSpec } from '../../../src'
import { bucketTaskWorkspaces, type Task } from '../../../src/fabric/tasks'
import { sha256 } from '../../../src/fabric/ledger/run-capture'
import { S3Objects } from '../../../src/workspace'
import { startS3Server, type S3Server } from '../../servers/s3-server'
import { startRedisServer, type RedisServer } from '../../../bench/redis-server'

/**
 * Plans whose steps keep their workspaces in the bucket (`fabric.plans.workspaces: s3`, or a plan's `workspace`),
 * against a real S3-compatible server (s3rver, through the SDK v3 client), with real runs on quickjs and the native
 * shell, on both stores: the embedded SQLite stores in a temp dir, and a real redis-server on a loopback port (each
 * data dir its own key prefix).
 */

const BUCKET = 'execgate-plans'
// Both stores always: without redis-server the Redis half fails with the command that installs it (never skipped).
describe.each(['sqlite', 'redis'] as const)('%s store', (storeKind) => {
  let s3: S3Server
  let redis: RedisServer | undefined
  let savedEnv: NodeJS.ProcessEnv
  const dirs: string[] = []
  const gates: Execgate[] = []

  const tempDir = () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-plan-ws-'))
    dirs.push(dir)
    return dir
  }

  async function open(workspaces: 'memory' | 's3', dataDir = tempDir()): Promise<Execgate> {
    const store = redis ? { store: 'redis' as const, redisUrl: redis.url, redisPrefix: path.basename(dataDir) } : {}
    const gate = await createExecgate({
      overrides: {
        execution: { enabled: ['quickjs', 'shell'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: {
          ...store,
          dataDir,
          s3: { bucket: BUCKET, prefix: 'execgate/', endpoint: s3.endpoint, forcePathStyle: true },
          plans: { workspaces },
        },
      },
    })
    gates.push(gate)
    return gate
  }

  const bucketKeys = async (prefix: string) =>
    (await new S3Objects(s3.settings(BUCKET, 'execgate/')).list(prefix)).map((entry) => entry.key.slice(prefix.length)).sort()

  beforeAll(async () => {
    if (storeKind === 'redis') redis = await startRedisServer()
    s3 = await startS3Server()
    await new S3Objects(s3.settings(BUCKET)).ensureBucket()
    savedEnv = { ...process.env }
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER'
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER'
  })

  afterAll(async () => {
    for (const gate of gates) await gate.dispose()
    process.env = savedEnv
    await s3.stop()
    await redis?.stop()
    redis = undefined
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
  })

  const STEPS: PlanStepSpec[] = [
    { id: 'extract', language: 'javascript', code: 'await write_file("rows.csv", "a,1\\nb,2\\nc,3\\n"); 3' },
    {
      id: 'count',
      language: 'bash',
      dependsOn: ['extract'],
      code: 'wc -l < steps/extract/files/rows.csv | tr -d " " > count.txt; cat count.txt',
    },
  ]

  test('each step runs in its own prefix of the bucket, which keeps what it was given and what it wrote', async () => {
    const execgate = await open('s3')
    const plan = await execgate.plans.run({ steps: STEPS })
    expect(plan.workspace).toBe('s3')
    const done = await execgate.plans.wait(plan.id, { timeoutMs: 60_000 })
    expect(done.state).toBe('COMPLETED')
    // The steps read and wrote files under the default policy (filesystem: none): the grant reached their bucket workspace.
    expect(done.steps.map((step) => step.result?.status)).toEqual(['ok', 'ok'])
    expect(done.steps[1]!.result!.stdout).toBe('3\n')
    expect(await bucketKeys(`workspaces/plans/${plan.id}/`)).toEqual([
      'count/v1/count.txt',
      'count/v1/steps/extract/files/rows.csv',
      'count/v1/steps/extract/value.json',
      'extract/v1/rows.csv',
    ])
    const objects = new S3Objects(s3.settings(BUCKET, `execgate/workspaces/plans/${plan.id}/`))
    expect((await objects.get('count/v1/count.txt'))!.body.toString()).toBe('3\n')
    // Dependents still get their inputs as files of their request: the ledger links them to what produced them.
    const count = (await execgate.ledger.record(done.steps[1]!.result!.runId!)).record
    expect(count.inputs.map((input) => [input.path, input.sha256])).toContainEqual([
      'steps/extract/files/rows.csv',
      sha256('a,1\nb,2\nc,3\n'),
    ])
    expect(count.outputs.map((output) => output.path)).toEqual(['count.txt'])
  })

  test('a plan chooses its workspace over the configured default, either way', async () => {
    const inMemoryByDefault = await open('memory')
    const inBucket = await inMemoryByDefault.plans.run({ steps: STEPS, workspace: 's3' })
    const inMemory = await inMemoryByDefault.plans.run({ steps: STEPS })
    expect((await inMemoryByDefault.plans.wait(inBucket.id, { timeoutMs: 60_000 })).state).toBe('COMPLETED')
    expect((await inMemoryByDefault.plans.wait(inMemory.id, { timeoutMs: 60_000 })).state).toBe('COMPLETED')
    expect(await bucketKeys(`workspaces/plans/${inBucket.id}/`)).toHaveLength(4)
    expect(await bucketKeys(`workspaces/plans/${inMemory.id}/`)).toEqual([])

    const inBucketByDefault = await open('s3')
    const optedOut = await inBucketByDefault.plans.run({ steps: STEPS, workspace: 'memory' })
    expect(optedOut.workspace).toBeUndefined()
    expect((await inBucketByDefault.plans.wait(optedOut.id, { timeoutMs: 60_000 })).state).toBe('COMPLETED')
    expect(await bucketKeys(`workspaces/plans/${optedOut.id}/`)).toEqual([])
  })

  test("after a restart on the same data dir and bucket, the plan and its steps' files are still found", async () => {
    const dataDir = tempDir()
    const before = await open('s3', dataDir)
    const plan = await before.plans.run({ steps: STEPS })
    const done = await before.plans.wait(plan.id, { timeoutMs: 60_000 })
    expect(done.state).toBe('COMPLETED')
    await before.dispose()
    gates.splice(gates.indexOf(before), 1)

    const after = await open('memory', dataDir)
    const found = await after.plans.get(plan.id)
    expect(found?.state).toBe('COMPLETED')
    expect(found?.workspace).toBe('s3')
    // Nothing ran again: the same runs, and the files they left in the bucket.
    expect(found?.steps.map((step) => step.result?.runId)).toEqual(done.steps.map((step) => step.result?.runId))
    expect(await bucketKeys(`workspaces/plans/${plan.id}/`)).toEqual([
      'count/v1/count.txt',
      'count/v1/steps/extract/files/rows.csv',
      'count/v1/steps/extract/value.json',
      'extract/v1/rows.csv',
    ])
  })

  test("tenants do not reach each other's plans or their files in the bucket", async () => {
    const execgate = await open('s3')
    const mine = await execgate.plans.run({ steps: STEPS }, { tenant: 'acme' })
    expect((await execgate.plans.wait(mine.id, { tenant: 'acme', timeoutMs: 60_000 })).state).toBe('COMPLETED')
    // Another tenant's plan answers exactly like a missing one.
    expect(await execgate.plans.get(mine.id, { tenant: 'globex' })).toBeUndefined()
    const missing = await execgate.plans.cancel('no-such-plan', { tenant: 'globex' }).catch((error: unknown) => error)
    const foreign = await execgate.plans.cancel(mine.id, { tenant: 'globex' }).catch((error: unknown) => error)
    expect(isExecgateError(foreign, 'EXECGATE_NOT_FOUND')).toBe(true)
    expect((foreign as Error).message.replace(mine.id, 'ID')).toBe((missing as Error).message.replace('no-such-plan', 'ID'))
    // A step of the other tenant's plan sees only its own prefix: its workspace's root is that prefix, not the bucket.
    const snoop = await execgate.plans.run(
      {
        steps: [
          {
            id: 'snoop',
            language: 'bash',
            code: `ls -R / ; cat ../../../${mine.id}/extract/v1/rows.csv /plans/${mine.id}/extract/v1/rows.csv 2>/dev/null; true`,
          },
        ],
      },
      { tenant: 'globex' },
    )
    const snooped = await execgate.plans.wait(snoop.id, { tenant: 'globex', timeoutMs: 60_000 })
    expect(snooped.state).toBe('COMPLETED')
    expect(snooped.steps[0]!.result!.stdout).not.toContain('a,1')
    expect(await bucketKeys(`workspaces/plans/${snoop.id}/`)).toEqual([])
    expect(await bucketKeys(`workspaces/plans/${mine.id}/`)).toHaveLength(4)
  })

  test('an attempt starts from an empty prefix: what an earlier attempt left is gone', async () => {
    const objects = new S3Objects(s3.settings(BUCKET, 'execgate/'))
    await objects.put('workspaces/plans/p-retry/a/v1/left-by-attempt-1.txt', Buffer.from('stale'))
    const openFor = bucketTaskWorkspaces(objects, { maxFileBytes: 1024, maxTotalBytes: 4096, maxFiles: 10 })
    const workspace = await openFor({ id: 'plan.p-retry.a.v1', workspace: { kind: 'bucket', prefix: 'plans/p-retry/a/v1/' } } as Task)
    expect(await workspace.list()).toEqual([])
    expect(await bucketKeys('workspaces/plans/p-retry/')).toEqual([])
  })

  test('without a bucket, a plan asking for one is refused, and so is a default of s3 at start-up', async () => {
    const noBucket = await createExecgate({
      warm: false,
      overrides: {
        execution: { enabled: ['quickjs'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: { dataDir: tempDir() },
      },
    })
    gates.push(noBucket)
    const refused = await noBucket.plans.run({ steps: STEPS, workspace: 's3' }).catch((error: unknown) => error)
    expect(isExecgateError(refused, 'EXECGATE_REQUEST_INVALID')).toBe(true)
    expect((refused as Error).message).toContain('workspace "s3" needs a bucket, and fabric.s3.bucket is empty (EXECGATE_FABRIC_S3_BUCKET)')
    await expect(
      createExecgate({
        warm: false,
        env: {
          EXECGATE_LOG_LEVEL: 'silent',
          EXECGATE_READINESS_ENABLED: 'false',
          EXECGATE_EXECUTION_ENABLED: 'quickjs',
          EXECGATE_FABRIC_PLANS_WORKSPACES: 's3',
          EXECGATE_FABRIC_DATA_DIR: tempDir(),
        },
      }),
    ).rejects.toThrow(/fabric\.plans\.workspaces is "s3" but fabric\.s3\.bucket is empty/)
  })

  test('a workspace that is neither memory nor s3 is refused, in a plan and in the config', async () => {
    const execgate = await open('memory')
    const refused = await execgate.plans.run({ steps: STEPS, workspace: 'disk' } as never).catch((error: unknown) => error)
    expect(isExecgateError(refused, 'EXECGATE_REQUEST_INVALID')).toBe(true)
    expect((refused as Error).message).toMatch(/workspace/)
    const badConfig = await createExecgate({
      warm: false,
      env: { EXECGATE_LOG_LEVEL: 'silent', EXECGATE_FABRIC_PLANS_WORKSPACES: 'disk', EXECGATE_FABRIC_DATA_DIR: tempDir() },
    }).catch((error: unknown) => error)
    expect(isExecgateError(badConfig, 'EXECGATE_CONFIG_INVALID')).toBe(true)
    expect((badConfig as Error).message).toMatch(/fabric\.plans\.workspaces/)
  })
})
