import type { KeyObject } from 'node:crypto'
import { verifyEnvelope } from './dsse'
import {
  IN_TOTO_PAYLOAD_TYPE,
  IN_TOTO_STATEMENT_TYPE,
  PLAN_PREDICATE_TYPE,
  RUN_PREDICATE_TYPE,
  payloadDigest,
  type PlanPredicate,
  type RunPredicate,
  type Statement,
} from './statement'

/**
 * Offline verification of a signed receipt: only the envelope and the public key, no server, no ledger. Anything
 * that does not hold is a reason in words, never a throw: a changed byte, another key, a payload that is not an
 * execgate in-toto Statement.
 */

export type ReceiptStatement = Statement<RunPredicate> | Statement<PlanPredicate>

export type ReceiptVerification =
  { ok: true; keyid: string; statement: ReceiptStatement; kind: 'run' | 'plan'; payloadSha256: string } | { ok: false; reason: string }

export function verifyReceipt(envelope: unknown, publicKey: KeyObject | string): ReceiptVerification {
  const signed = verifyEnvelope(envelope, publicKey, IN_TOTO_PAYLOAD_TYPE)
  if (!signed.ok) return signed
  let statement: Partial<Statement<unknown>>
  try {
    statement = JSON.parse(signed.payload.toString('utf8')) as Partial<Statement<unknown>>
  } catch {
    return { ok: false, reason: 'the signed payload is not JSON' }
  }
  if (typeof statement !== 'object' || statement === null || statement._type !== IN_TOTO_STATEMENT_TYPE)
    return { ok: false, reason: `the payload is not an in-toto Statement (_type must be ${IN_TOTO_STATEMENT_TYPE})` }
  if (
    !Array.isArray(statement.subject) ||
    !statement.subject.every((item) => typeof item?.name === 'string' && /^[0-9a-f]{64}$/.test(item?.digest?.sha256 ?? ''))
  ) {
    return { ok: false, reason: 'the statement subjects must each have a name and a sha256 digest' }
  }
  if (statement.predicateType !== RUN_PREDICATE_TYPE && statement.predicateType !== PLAN_PREDICATE_TYPE)
    return { ok: false, reason: `the predicateType "${String(statement.predicateType)}" is not an execgate receipt` }
  if (typeof statement.predicate !== 'object' || statement.predicate === null)
    return { ok: false, reason: 'the statement has no predicate' }
  return {
    ok: true,
    keyid: signed.keyid,
    statement: statement as ReceiptStatement,
    kind: statement.predicateType === RUN_PREDICATE_TYPE ? 'run' : 'plan',
    payloadSha256: payloadDigest(signed.payload),
  }
}

/**
 * Checks that run receipts (each already verified) are steps the plan's receipt covers: each one's payload digest
 * must be a subject of the plan's statement. Returns the first that is not, in words.
 */
export function checkPlanSteps(
  plan: Statement<PlanPredicate>,
  steps: readonly { file: string; payloadSha256: string; statement: ReceiptStatement }[],
): string | undefined {
  const covered = new Set(plan.subject.filter((item) => item.name.startsWith('receipts/')).map((item) => item.digest.sha256))
  for (const step of steps) {
    if (step.statement.predicateType !== RUN_PREDICATE_TYPE) return `${step.file} is not a run receipt`
    if (!covered.has(step.payloadSha256))
      return (
        `${step.file} (run ${(step.statement.predicate as RunPredicate).runId}) is not one of the ` +
        `plan's step receipts: its payload digest ${step.payloadSha256} is not a subject`
      )
  }
  return undefined
}
