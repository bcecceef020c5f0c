import { createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { ExecgateError } from '../../../core'
import { keyIdOf } from './dsse'

/** The server's receipt-signing key: an Ed25519 private key, its public half as PEM, and the public key's id. */
export interface SigningKey {
  privateKey: KeyObject
  publicKey: KeyObject
  /** SPKI PEM of the public key: what `GET /v1/ledger/public-key` answers and `verify-receipt --key` reads. */
  publicKeyPem: string
  /** Hex SHA-256 of the public key's DER SPKI. */
  keyid: string
}

export const SIGNING_KEY_FILE_NAME = 'ledger-signing-key.pem'

function fromPrivatePem(pem: string, file: string): SigningKey {
  let privateKey: KeyObject
  try {
    privateKey = createPrivateKey(pem)
  } catch (error) {
    throw new ExecgateError(
      'EXECGATE_CONFIG_INVALID',
      { detail: `fabric.ledger.signing.key: ${file} is not a PEM private key (${(error as Error).message})` },
      { cause: error },
    )
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new ExecgateError('EXECGATE_CONFIG_INVALID', {
      detail: `fabric.ledger.signing.key: ${file} holds a ${privateKey.asymmetricKeyType} key; receipts are signed with Ed25519`,
    })
  }
  const publicKey = createPublicKey(privateKey)
  return { privateKey, publicKey, publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(), keyid: keyIdOf(publicKey) }
}

/**
 * Writes a new key where none is, atomically: a temporary file of mode 0600 linked into place, so a server and a
 * CLI starting together never read half a key, and the one that loses the race reads the winner's.
 */
function generateInto(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true })
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
  const temporary = `${file}.${randomUUID()}.tmp`
  fs.writeFileSync(temporary, pem, { mode: 0o600, flag: 'wx' })
  try {
    fs.linkSync(temporary, file)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  } finally {
    fs.rmSync(temporary, { force: true })
  }
}

/**
 * The key `fabric.ledger.signing.key` names, or, when that is empty, `<dataDir>/ledger-signing-key.pem`, generated
 * (mode 0600) the first time it is needed. A configured file that does not exist is an error, not a new key: receipts
 * signed by a key nobody expected would verify against nothing the operator holds.
 */
export function loadSigningKey(configured: string, dataDir: string): SigningKey {
  const file = configured || path.join(dataDir, SIGNING_KEY_FILE_NAME)
  if (!configured && !fs.existsSync(file)) generateInto(file)
  let pem: string
  try {
    pem = fs.readFileSync(file, 'utf8')
  } catch (error) {
    throw new ExecgateError(
      'EXECGATE_CONFIG_INVALID',
      {
        detail:
          `fabric.ledger.signing.key: cannot read ${file} ` +
          `(${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); name an Ed25519 ` +
          `PEM private key, or leave it empty to generate one in fabric.dataDir`,
      },
      { cause: error },
    )
  }
  return fromPrivatePem(pem, file)
}
