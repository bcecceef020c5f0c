import { webcrypto, X509Certificate as NodeX509 } from 'node:crypto'
import net from 'node:net'

/**
 * Certificates the gateway makes: its per-server CA, and leaves for the hosts whose TLS it re-terminates to add a
 * secret. Node can verify X.509 but not build it; @peculiar/x509 builds it over WebCrypto (no native code, no
 * OpenSSL binary), loaded only when a certificate is needed (docs/network.md: why this library).
 */
export interface CertificateAuthority {
  readonly certificatePem: string
  /** Issues a leaf for `host` (a name or an IP address), valid for a day. */
  issue(host: string): Promise<{ certificatePem: string; keyPem: string }>
}

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const
const DAY_MS = 24 * 60 * 60 * 1000

type X509Module = typeof import('@peculiar/x509')
let loaded: X509Module | undefined

function x509(): X509Module {
  if (!loaded) {
    // @peculiar/x509's container (tsyringe) needs the Reflect metadata polyfill; inversify has it loaded already.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a side-effect polyfill, loaded with x509 on first use
    require('reflect-metadata')
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use, synchronously
    loaded = require('@peculiar/x509') as X509Module
    loaded.cryptoProvider.set(webcrypto as unknown as Parameters<X509Module['cryptoProvider']['set']>[0])
  }
  return loaded
}

function pem(label: string, der: ArrayBuffer): string {
  const base64 = Buffer.from(der)
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
  return `-----BEGIN ${label}-----\n${base64}${base64.endsWith('\n') ? '' : '\n'}-----END ${label}-----\n`
}

function serial(): string {
  return Buffer.from(webcrypto.getRandomValues(new Uint8Array(16)))
    .toString('hex')
    .replace(/^[89a-f]/, '1')
}

/** A fresh CA with its key in memory only (a server restart makes a new one). */
export async function createCertificateAuthority(commonName = 'execgate egress gateway CA'): Promise<CertificateAuthority> {
  const lib = x509()
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair
  const now = Date.now()
  const ca = await lib.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${commonName}`,
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 365 * DAY_MS),
    signingAlgorithm: ALGORITHM,
    keys,
    extensions: [
      new lib.BasicConstraintsExtension(true, 0, true),
      new lib.KeyUsagesExtension(lib.KeyUsageFlags.keyCertSign | lib.KeyUsageFlags.cRLSign, true),
      await lib.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  })
  const certificatePem = ca.toString('pem')
  const leaves = new Map<string, Promise<{ certificatePem: string; keyPem: string }>>()
  const issue = async (host: string) => {
    const leafKeys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair
    const altName = net.isIP(host) ? { type: 'ip' as const, value: host } : { type: 'dns' as const, value: host }
    const leaf = await lib.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${host}`,
      issuer: ca.subject,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + DAY_MS),
      signingAlgorithm: ALGORITHM,
      publicKey: leafKeys.publicKey,
      signingKey: keys.privateKey,
      extensions: [
        new lib.BasicConstraintsExtension(false, undefined, true),
        new lib.KeyUsagesExtension(lib.KeyUsageFlags.digitalSignature, true),
        new lib.ExtendedKeyUsageExtension([lib.ExtendedKeyUsage.serverAuth]),
        new lib.SubjectAlternativeNameExtension([altName]),
        await lib.AuthorityKeyIdentifierExtension.create(keys.publicKey),
      ],
    })
    const keyPem = pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey))
    return { certificatePem: leaf.toString('pem'), keyPem }
  }
  return {
    certificatePem,
    issue(host) {
      let leaf = leaves.get(host)
      if (!leaf) {
        leaf = issue(host)
        leaves.set(host, leaf)
      }
      return leaf
    },
  }
}

/** Whether `certificatePem` is signed by `caPem` (tests, and a check at start-up). */
export function issuedBy(certificatePem: string, caPem: string): boolean {
  return new NodeX509(certificatePem).verify(new NodeX509(caPem).publicKey)
}
