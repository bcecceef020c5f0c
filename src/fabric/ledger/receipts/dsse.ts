import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto'

/**
 * DSSE (Dead Simple Signing Envelope, github.com/secure-systems-lab/dsse, protocol v1.0.0): the signature covers
 * PAE(payloadType, payload), never the JSON around it, so the envelope can be re-serialised freely and the payload
 * type cannot be swapped without breaking the signature.
 */

export interface DsseSignature {
  /** A hint naming the key; unauthenticated (the spec says so): verification never trusts it. */
  keyid: string
  /** Base64 of the Ed25519 signature over the PAE. */
  sig: string
}

export interface DsseEnvelope {
  /** Base64 (standard alphabet, padded) of the payload bytes. */
  payload: string
  payloadType: string
  signatures: DsseSignature[]
}

/**
 * Pre-Authentication Encoding: `"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`, where LEN is the byte length in
 * ASCII decimal without leading zeros and SP one space. Lengths are of the UTF-8 bytes, not of the string.
 */
export function preAuthEncoding(payloadType: string, payload: Buffer): Buffer {
  const type = Buffer.from(payloadType, 'utf8')
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `), type, Buffer.from(` ${payload.length} `), payload])
}

/** The key id execgate uses: the lower-case hex SHA-256 of the public key's DER SubjectPublicKeyInfo. */
export function keyIdOf(publicKey: KeyObject): string {
  const der = publicKey.export({ format: 'der', type: 'spki' })
  return createHash('sha256').update(der).digest('hex')
}

/** Signs the payload with an Ed25519 private key (deterministic: the same payload gives the same envelope). */
export function signEnvelope(payloadType: string, payload: Buffer, privateKey: KeyObject, keyid: string): DsseEnvelope {
  const sig = sign(null, preAuthEncoding(payloadType, payload), privateKey)
  return { payload: payload.toString('base64'), payloadType, signatures: [{ keyid, sig: sig.toString('base64') }] }
}

/** Base64 as DSSE allows it: standard or URL-safe alphabet, padding optional. Undefined for anything else. */
export function decodeBase64(text: unknown): Buffer | undefined {
  if (typeof text !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(text)) return undefined
  const standard = text.replace(/-/g, '+').replace(/_/g, '/')
  const decoded = Buffer.from(standard, 'base64')
  // Buffer.from ignores trailing garbage bits; re-encoding catches a payload that is not what it claims to be.
  if (decoded.toString('base64').replace(/=+$/, '') !== standard.replace(/=+$/, '')) return undefined
  return decoded
}

export type EnvelopeCheck = { ok: true; payload: Buffer; keyid: string } | { ok: false; reason: string }

/**
 * Checks an envelope against one public key: some signature must verify over the PAE of its payload type and
 * payload. Says why not in words: malformed, or no signature by this key (a changed byte, another key).
 */
export function verifyEnvelope(envelope: unknown, publicKey: KeyObject | string, expectedPayloadType?: string): EnvelopeCheck {
  if (typeof envelope !== 'object' || envelope === null)
    return { ok: false, reason: 'not a DSSE envelope (expected a JSON object with payload, payloadType and signatures)' }
  const { payload, payloadType, signatures } = envelope as Partial<DsseEnvelope>
  if (typeof payloadType !== 'string') return { ok: false, reason: 'the envelope has no payloadType' }
  if (expectedPayloadType !== undefined && payloadType !== expectedPayloadType)
    return { ok: false, reason: `the payloadType is "${payloadType}", not "${expectedPayloadType}"` }
  const body = decodeBase64(payload)
  if (!body) return { ok: false, reason: 'the envelope payload is not base64' }
  if (!Array.isArray(signatures) || signatures.length === 0) return { ok: false, reason: 'the envelope has no signatures' }
  let key: KeyObject
  try {
    key = typeof publicKey === 'string' ? createPublicKey(publicKey) : publicKey
  } catch (error) {
    return { ok: false, reason: `the public key cannot be read: ${(error as Error).message}` }
  }
  if (key.asymmetricKeyType !== 'ed25519')
    return { ok: false, reason: `the public key is ${key.asymmetricKeyType ?? 'not an asymmetric key'}, not Ed25519` }
  const keyid = keyIdOf(key)
  const message = preAuthEncoding(payloadType, body)
  for (const signature of signatures) {
    const sig = decodeBase64((signature as Partial<DsseSignature> | null)?.sig)
    if (sig && sig.length === 64 && verify(null, message, key, sig)) return { ok: true, payload: body, keyid }
  }
  const named = signatures
    .map((signature) => (signature as Partial<DsseSignature> | null)?.keyid)
    .filter((id): id is string => typeof id === 'string' && id !== '')
  if (named.length > 0 && !named.includes(keyid)) {
    return {
      ok: false,
      reason: `no signature by the given key ${keyid}: the receipt names key ${named.join(', ')} (signed with another key)`,
    }
  }
  return { ok: false, reason: `no signature verifies with key ${keyid}: the payload, its type or the signature was changed` }
}
