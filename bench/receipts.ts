import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createExecgate } from '../src'
import { verifyReceipt } from '../src/fabric/ledger/receipts/verify-receipt'
import { measure, type BenchSection } from './harness'

/**
 * What a signed receipt costs: `ledger.receipt(runId)` (read the record from SQLite, build the Statement, canonical
 * JSON, Ed25519 sign) and an offline `verifyReceipt` (PAE, Ed25519 verify, parse), for a trivial quickjs run's record.
 */
export async function run(): Promise<BenchSection> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-bench-receipts-'))
  const execgate = await createExecgate({
    overrides: { execution: { enabled: ['quickjs'] }, readiness: { enabled: false }, log: { level: 'silent' }, fabric: { dataDir } },
  })
  try {
    const result = await execgate.execute({ language: 'javascript', code: '[1, 2, 3].map((n) => n * 2)' })
    const runId = result.runId!
    const key = (await execgate.ledger.publicKey()).publicKeyPem
    const envelope = await execgate.ledger.receipt(runId)
    const issue = await measure('ledger.receipt(runId): read, build, sign', () => execgate.ledger.receipt(runId), {
      iterations: 2000,
      warmup: 100,
    })
    const check = await measure(
      'verifyReceipt(envelope, key): offline',
      () => {
        if (!verifyReceipt(envelope, key).ok) throw new Error('the receipt does not verify')
      },
      { iterations: 2000, warmup: 100 },
    )
    return {
      title: 'receipts: issuing and verifying a signed run receipt',
      measurements: [issue, check],
      ratios: [],
      notes: [
        `envelope ${Buffer.byteLength(JSON.stringify(envelope))} bytes for a trivial run; the ` +
          `record comes from ledger.sqlite each time (no cache)`,
      ],
    }
  } finally {
    await execgate.dispose()
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
