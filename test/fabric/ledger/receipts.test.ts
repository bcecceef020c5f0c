import { createHash, createPublicKey, generateKeyPairSync, verify } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate, type Execgate } from '../../../src'
import { verifyReceipt } from '../../../src/fabric/ledger/receipts/verify-receipt'
import { redisServerInstalled, startRedisServer, type RedisServer } from '../../../bench/redis-server'

/**
 * Receipts from both record stores (a real SQLite file; a real redis-server on a loopback port), through the library:
 * a run's receipt names its record's exact place in the chain, a plan's covers the runs of its steps (recorded the way
 * the plan engine records them: the version first, then runs carrying its provenance), and a configured key signs.
 */

if (!redisServerInstalled()) throw new Error('redis-server is not installed: run `bash scripts/setup/redis.sh` (npm run test:ci does)')

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex')
/** DSSE v1 PAE, written here from the spec. */
const pae = (type: string, body: Buffer) => Buffer.concat([Buffer.from(`DSSEv1 ${Buffer.byteLength(type)} ${type} ${body.length} `), body])

describe.each(['sqlite', 'redis'] as const)('receipts from the %s record store', (store) => {
  let redis: RedisServer | undefined
  let execgate: Execgate
  let dataDir: string
  const keyFile = () => path.join(dataDir, 'operator-key.pem')

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `execgate-receipts-${store}-`))
    // An operator's own key (fabric.ledger.signing.key), not a generated one.
    fs.writeFileSync(keyFile(), generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 })
    if (store === 'redis') redis = await startRedisServer()
    execgate = await createExecgate({
      overrides: {
        execution: { enabled: ['quickjs'] },
        readiness: { enabled: false },
        log: { level: 'silent' },
        fabric: {
          dataDir,
          ledger: { store, signing: { key: keyFile() } },
          ...(redis ? { redisUrl: redis.url, redisPrefix: `receipts-${process.pid}` } : {}),
        },
      },
    })
  }, 60_000)
  afterAll(async () => {
    await execgate.dispose()
    await redis?.stop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  test("a run's receipt verifies with the configured key and names the record's place in the chain", async () => {
    const result = await execgate.execute({ language: 'javascript', code: '[1, 2, 3].map((n) => n * 2)' })
    const envelope = await execgate.ledger.receipt(result.runId!)
    const publicKey = await execgate.ledger.publicKey()
    expect(publicKey.publicKeyPem).toBe(createPublicKey(fs.readFileSync(keyFile(), 'utf8')).export({ format: 'pem', type: 'spki' }))
    // No key was generated: the configured one signs.
    expect(fs.existsSync(path.join(execgate.config.fabric.dataDir, 'ledger-signing-key.pem'))).toBe(false)
    const payload = Buffer.from(envelope.payload, 'base64')
    expect(
      verify(
        null,
        pae(envelope.payloadType, payload),
        createPublicKey(publicKey.publicKeyPem),
        Buffer.from(envelope.signatures[0]!.sig, 'base64'),
      ),
    ).toBe(true)
    const { predicate, subject } = JSON.parse(payload.toString())
    const stored = await execgate.ledger.record(result.runId!)
    expect(predicate.ledger).toEqual({ seq: stored.seq, hash: stored.hash, prevHash: stored.prevHash })
    expect(subject).toContainEqual(expect.objectContaining({ name: 'value', digest: { sha256: sha('[2,4,6]') } }))
    expect(await execgate.ledger.receipt(result.runId!, { tenant: 'someone-else' }).catch((error: { code: string }) => error.code)).toBe(
      'EXECGATE_NOT_FOUND',
    )
  })

  test("a plan's receipt covers every run of its steps, attempts included, and nothing else", async () => {
    const planId = `plan-${store}`
    await execgate.ledger.recordPlanVersion({ planId, version: 1, document: { steps: ['a', 'b'] }, reason: 'submitted' })
    const runs = []
    for (const [stepId, attempt, code] of [
      ['a', 1, 'throw new Error("flaky")'],
      ['a', 2, '1'],
      ['b', 1, '2'],
    ] as const) {
      runs.push(
        await execgate.execute(
          { language: 'javascript', code },
          { provenance: { planId, planVersion: 1, stepId, taskId: `task-${stepId}`, attempt } },
        ),
      )
    }
    // Another plan with the same document, and a run outside any plan: neither is this plan's.
    await execgate.ledger.recordPlanVersion({ planId: 'other', version: 1, document: { steps: ['a', 'b'] } })
    await execgate.execute({ language: 'javascript', code: '3' }, { provenance: { planId: 'other', planVersion: 1, stepId: 'a' } })
    await execgate.execute({ language: 'javascript', code: '4' })

    const envelope = await execgate.ledger.planReceipt(planId)
    const verified = verifyReceipt(envelope, (await execgate.ledger.publicKey()).publicKeyPem)
    if (!verified.ok) throw new Error(verified.reason)
    expect(verified.kind).toBe('plan')
    const predicate = verified.statement.predicate as {
      steps: { runId: string; stepId: string; attempt: number; status: string; receiptSha256: string }[]
      versions: { version: number; reason: string }[]
    }
    expect(predicate.versions).toEqual([expect.objectContaining({ version: 1, reason: 'submitted' })])
    expect(predicate.steps.map((step) => [step.stepId, step.attempt, step.status])).toEqual([
      ['a', 1, 'error'],
      ['a', 2, 'ok'],
      ['b', 1, 'ok'],
    ])
    for (const [index, run] of runs.entries()) {
      const stepReceipt = await execgate.ledger.receipt(run.runId!)
      const digest = sha(Buffer.from(stepReceipt.payload, 'base64'))
      expect(predicate.steps[index]).toMatchObject({ runId: run.runId, receiptSha256: digest })
      expect(verified.statement.subject).toContainEqual(
        expect.objectContaining({ name: `receipts/${run.runId}`, digest: { sha256: digest } }),
      )
    }
    expect(await execgate.ledger.planReceipt('no-such-plan').catch((error: { code: string }) => error.code)).toBe('EXECGATE_NOT_FOUND')
  })
})

test('a configured key file that does not exist stops the receipt with the key and what to do, rather than a new key', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-receipts-nokey-'))
  const execgate = await createExecgate({
    overrides: {
      execution: { enabled: ['quickjs'] },
      readiness: { enabled: false },
      log: { level: 'silent' },
      fabric: { dataDir, ledger: { signing: { key: path.join(dataDir, 'missing.pem') } } },
    },
  })
  try {
    const result = await execgate.execute({ language: 'javascript', code: '1' })
    await expect(execgate.ledger.receipt(result.runId!)).rejects.toMatchObject({
      code: 'EXECGATE_CONFIG_INVALID',
      message: expect.stringContaining(`cannot read ${path.join(dataDir, 'missing.pem')} (ENOENT)`),
    })
    expect(fs.readdirSync(execgate.config.fabric.dataDir).filter((name) => name.endsWith('.pem'))).toEqual([])
  } finally {
    await execgate.dispose()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
})
