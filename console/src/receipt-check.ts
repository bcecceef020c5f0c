/**
 * A signed receipt checked in the browser, as `execgate ledger verify-receipt` checks it offline
 * (src/fabric/ledger/receipts/verify-receipt.ts): DSSE v1 over the in-toto payload, Ed25519 by WebCrypto, the key id
 * the SHA-256 of the key's SubjectPublicKeyInfo. The console cannot import the server's code (node:crypto), so the
 * same rules are written again here and tested against the server's receipts in test/console/run-receipt.test.ts.
 */

export const IN_TOTO_PAYLOAD_TYPE = 'application/vnd.in-toto+json'
const IN_TOTO_STATEMENT_TYPE = 'https://in-toto.io/Statement/v1'
const PREDICATE_TYPES = ['https://execgate.dev/receipt/run/v1', 'https://execgate.dev/receipt/plan/v1']

export interface ReceiptEnvelope {
  payload: string
  payloadType: string
  signatures: { keyid: string; sig: string }[]
}

export interface ReceiptStatementView {
  _type: string
  subject: { name: string; digest: { sha256: string }; mediaType?: string; annotations?: Record<string, unknown> }[]
  predicateType: string
  predicate: Record<string, unknown>
}

export type ReceiptCheck =
  | { ok: true; keyid: string; payloadSha256: string; statement: ReceiptStatementView }
  | { ok: false; reason: string; statement?: ReceiptStatementView }

/** Standard or URL-safe base64, padding optional (as DSSE allows); undefined for anything else. */
function decodeBase64(text: unknown): Uint8Array<ArrayBuffer> | undefined {
  if (typeof text !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(text)) return undefined
  const standard = text.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '')
  if (standard.length % 4 === 1) return undefined
  try {
    const binary = atob(standard + '='.repeat((4 - (standard.length % 4)) % 4))
    return Uint8Array.from(binary, (char) => char.charCodeAt(0))
  } catch {
    return undefined
  }
}

function hex(bytes: ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((byte) => byte.toString(16).padStart(2, '0')).join('')
}

/** DSSE's pre-authentication encoding: `DSSEv1 LEN(type) type LEN(body) body`, lengths in bytes. */
function preAuthEncoding(payloadType: string, payload: Uint8Array): Uint8Array<ArrayBuffer> {
  const encoder = new TextEncoder()
  const type = encoder.encode(payloadType)
  const head = encoder.encode(`DSSEv1 ${type.length} ${payloadType} ${payload.length} `)
  const message = new Uint8Array(head.length + payload.length)
  message.set(head)
  message.set(payload, head.length)
  return message
}

function statementOf(payload: Uint8Array): ReceiptStatementView | undefined {
  try {
    const statement = JSON.parse(new TextDecoder().decode(payload)) as ReceiptStatementView
    return typeof statement === 'object' && statement !== null ? statement : undefined
  } catch {
    return undefined
  }
}

/** Checks a receipt against the server's public key (PEM). Never throws: anything that does not hold is a reason. */
export async function checkReceipt(envelope: unknown, publicKeyPem: string): Promise<ReceiptCheck> {
  if (!globalThis.crypto?.subtle)
    return {
      ok: false,
      reason: 'this page cannot verify signatures: WebCrypto needs HTTPS or localhost; use `execgate ledger verify-receipt`',
    }
  if (typeof envelope !== 'object' || envelope === null)
    return { ok: false, reason: 'not a DSSE envelope (expected a JSON object with payload, payloadType and signatures)' }
  const { payload, payloadType, signatures } = envelope as Partial<ReceiptEnvelope>
  if (payloadType !== IN_TOTO_PAYLOAD_TYPE)
    return { ok: false, reason: `the payloadType is "${String(payloadType)}", not "${IN_TOTO_PAYLOAD_TYPE}"` }
  const body = decodeBase64(payload)
  if (!body) return { ok: false, reason: 'the envelope payload is not base64' }
  const statement = statementOf(body)
  if (!Array.isArray(signatures) || signatures.length === 0) return { ok: false, reason: 'the envelope has no signatures', statement }
  const der = decodeBase64(publicKeyPem.replace(/-----(BEGIN|END) PUBLIC KEY-----/g, '').replace(/\s+/g, ''))
  if (!der) return { ok: false, reason: 'the public key is not a PEM SubjectPublicKeyInfo', statement }
  let key: CryptoKey
  try {
    key = await crypto.subtle.importKey('spki', der, { name: 'Ed25519' }, false, ['verify'])
  } catch (error) {
    return { ok: false, reason: `the public key cannot be read as Ed25519 here: ${(error as Error).message}`, statement }
  }
  const keyid = hex(await crypto.subtle.digest('SHA-256', der))
  const message = preAuthEncoding(payloadType, body)
  let verified = false
  for (const signature of signatures) {
    const sig = decodeBase64(signature?.sig)
    if (sig?.length === 64 && (await crypto.subtle.verify({ name: 'Ed25519' }, key, sig, message))) verified = true
    if (verified) break
  }
  if (!verified) {
    const named = signatures.map((signature) => signature?.keyid).filter((id): id is string => typeof id === 'string' && id !== '')
    const reason =
      named.length > 0 && !named.includes(keyid)
        ? `no signature by the server's key ${keyid}: the receipt names key ${named.join(', ')} (signed with another key)`
        : `no signature verifies with key ${keyid}: the payload, its type or the signature was changed`
    return { ok: false, reason, statement }
  }
  if (!statement || statement._type !== IN_TOTO_STATEMENT_TYPE)
    return { ok: false, reason: `the payload is not an in-toto Statement (_type must be ${IN_TOTO_STATEMENT_TYPE})` }
  if (!Array.isArray(statement.subject) || !statement.subject.every((item) => /^[0-9a-f]{64}$/.test(item?.digest?.sha256 ?? '')))
    return { ok: false, reason: 'the statement subjects must each have a name and a sha256 digest', statement }
  if (!PREDICATE_TYPES.includes(statement.predicateType))
    return { ok: false, reason: `the predicateType "${statement.predicateType}" is not an execgate receipt`, statement }
  return { ok: true, keyid, payloadSha256: hex(await crypto.subtle.digest('SHA-256', body)), statement }
}
