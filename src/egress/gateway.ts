import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import type { EgressEndpoint, EgressPlacement, EgressRecord } from '../core'
import type { HostFunctionDefinition } from '../workspace'
import tls from 'node:tls'
import { AddressExemptions } from './address-check'
import { createCertificateAuthority, type CertificateAuthority } from './certificates'
import { EgressRun, type EgressCaps, type EgressQuota } from './egress-run'
import { ForwardProxy } from './forward-proxy'
import { hostFetch, type HostFetchOptions } from './host-fetch'
import { systemResolver, type EgressResolver } from './resolver'
import { loadSecrets, type LoadedSecret, type SecretDefinition } from './secrets'
import { TlsTerminator } from './tls-termination'

/** `security.egress.*` and `security.secrets`, as the gateway takes them. */
export interface EgressGatewayOptions {
  caps?: Partial<EgressCaps>
  /**
   * CIDRs exempt from the private-address check: for tests against loopback servers only. Named by
   * `execgate policy` whenever set. @default []
   */
  allowPrivateRanges?: readonly string[]
  secrets?: Readonly<Record<string, SecretDefinition>>
  /** How names become addresses. @default the system's resolver */
  resolver?: EgressResolver
  /** PEM CAs trusted beside the system's for the gateway's own HTTPS upstream (a test's self-signed server). */
  extraCa?: readonly string[]
  /** Folder of the per-run proxy sockets. @default a fresh folder under the OS temp dir */
  socketDir?: string
  /** The environment secrets are read from. @default process.env */
  environment?: NodeJS.ProcessEnv
}

export const DEFAULT_EGRESS_CAPS: EgressCaps = {
  maxRequests: 50,
  maxBytesIn: 10 * 1024 * 1024,
  maxBytesOut: 1024 * 1024,
  maxConnectionMs: 10_000,
  connectTimeoutMs: 3_000,
}

/** The `http_request` host function's name: the same in JavaScript and Python. */
export const HTTP_REQUEST_FUNCTION = 'http_request'

const HTTP_REQUEST_PARAMETERS = {
  type: 'array',
  minItems: 1,
  maxItems: 2,
  items: [
    { type: 'string', minLength: 1, maxLength: 8192 },
    {
      type: 'object',
      additionalProperties: false,
      properties: {
        method: { type: 'string', pattern: '^[A-Za-z]{1,16}$' },
        headers: { type: 'object', additionalProperties: { type: 'string', maxLength: 8192 } },
        body: { type: 'string' },
        bodyEncoding: { enum: ['utf8', 'base64'] },
        responseType: { enum: ['text', 'base64'] },
        redirect: { enum: ['follow', 'manual'] },
      },
    },
  ],
}

/** One run's way out: its record, the host function, and (for OS sandboxes) the proxy's socket. */
export interface EgressRunHandle {
  readonly run: EgressRun
  readonly hostFunction: HostFunctionDefinition
  /** Starts this run's proxy listener (a unix socket only this run reaches, at `placement` when given) and says where it is. */
  endpoint(placement?: EgressPlacement): Promise<EgressEndpoint>
  /** The run's record so far. */
  records(): EgressRecord[]
  /** No more connections: the listener closes and open connections are cut. Safe to call twice. */
  close(): void
}

/**
 * The egress gateway: one per server. Every way out of every tier — the forward proxy that OS sandboxes reach
 * through a socket, the `http_request` host function of the in-process engines — asks a run's `EgressRun`, which
 * applies the policy's rules, refuses private addresses after resolution, and counts and records every request.
 */
export class EgressGateway {
  readonly caps: EgressCaps
  readonly exemptions: AddressExemptions
  readonly secrets: readonly LoadedSecret[]
  private readonly resolver: EgressResolver
  private proxy?: ForwardProxy
  private authority?: Promise<CertificateAuthority>
  private caBundle?: Promise<{ path: string; pem: string }>
  private socketDir?: string
  private sequence = 0
  private readonly open = new Set<EgressRunHandle>()

  constructor(private readonly options: EgressGatewayOptions = {}) {
    this.caps = { ...DEFAULT_EGRESS_CAPS, ...options.caps }
    this.exemptions = new AddressExemptions(options.allowPrivateRanges ?? [])
    this.secrets = loadSecrets(options.secrets ?? {}, options.environment)
    this.resolver = options.resolver ?? systemResolver
  }

  /**
   * Opens a run's egress under its policy's rules (`network` must not be 'none'), its requests and bytes counted into
   * its tenant's live `quota` when it has one; throws on a rule that does not parse.
   */
  openRun(network: readonly string[], signal?: AbortSignal, quota?: EgressQuota): EgressRunHandle {
    const run = new EgressRun({
      network,
      caps: this.caps,
      resolver: this.resolver,
      exemptions: this.exemptions,
      ...(quota ? { quota } : {}),
    })
    let listener: net.Server | undefined
    let socketPath: string | undefined
    const sockets = new Set<net.Socket>()
    const secrets = this.secrets
    const extraCa = this.options.extraCa
    const handle: EgressRunHandle = {
      run,
      hostFunction: {
        name: HTTP_REQUEST_FUNCTION,
        description:
          'http_request(url, {method, headers, body, bodyEncoding, responseType, redirect}?) -> ' +
          '{status, headers, body, url, redirected}: an HTTP(S) request through the egress gateway, ' +
          "under the policy's network rules; responseType 'base64' answers the body's bytes as " +
          'base64',
        parameters: HTTP_REQUEST_PARAMETERS,
        handler: ([url, options], call) =>
          hostFetch(url as string, (options ?? {}) as HostFetchOptions, {
            run,
            secrets,
            ...(extraCa ? { extraCa } : {}),
            signal: call.signal,
          }),
      },
      endpoint: async (placement) => {
        // The sandbox trusts the gateway's CA only when the gateway may re-terminate its TLS: for a secret's hosts, or
        // for hosts the run's rules allow only for some methods.
        const trust = this.secrets.length || run.namesMethods ? await this.trustBundle() : undefined
        const withTrust = (where: string): EgressEndpoint => ({
          socketPath: where,
          ...(trust ? { caCertificatePem: trust.pem, caBundlePath: trust.path } : {}),
        })
        if (socketPath) return withTrust(socketPath)
        // The terminator costs nothing until a tunnel needs it (the CA is made on first need).
        const proxy = (this.proxy ??= new ForwardProxy(
          this.secrets,
          new TlsTerminator(this.secrets, () => this.certificateAuthority(), [...tls.rootCertificates, ...(extraCa ?? [])]),
        ))
        if (placement) {
          // A path the sandbox's folder reuses exec after exec: whatever an earlier run left there is not a listener.
          fs.rmSync(placement.socketPath, { force: true })
          socketPath = placement.socketPath
        } else socketPath = path.join(this.sockets(), `run-${process.pid}-${++this.sequence}.sock`)
        listener = net.createServer((socket) => {
          sockets.add(socket)
          socket.once('close', () => sockets.delete(socket))
          proxy.accept(socket, run)
        })
        await new Promise<void>((resolve, reject) => {
          listener!.once('error', reject)
          listener!.listen(socketPath, () => resolve())
        })
        // The sandbox's user is not ours: the socket must be connectable by anyone who can reach its path, and only
        // the run's sandbox has the path bound in.
        fs.chmodSync(socketPath, 0o666)
        return withTrust(socketPath)
      },
      records: () => [...run.records],
      close: () => {
        if (run.isClosed) return
        run.close()
        this.open.delete(handle)
        signal?.removeEventListener('abort', handle.close)
        listener?.close()
        for (const socket of sockets) socket.destroy()
        if (socketPath) fs.rmSync(socketPath, { force: true })
      },
    }
    signal?.addEventListener('abort', handle.close, { once: true })
    this.open.add(handle)
    return handle
  }

  /** The per-server CA, made on first need; its key never leaves this process (a restart makes a new one). */
  private certificateAuthority(): Promise<CertificateAuthority> {
    return (this.authority ??= createCertificateAuthority())
  }

  /**
   * What a sandbox trusts when the gateway may re-terminate its TLS: the system's CAs and the gateway's, in one PEM
   * file (SSL_CERT_FILE, NODE_EXTRA_CA_CERTS) beside the run sockets, made once.
   */
  private trustBundle(): Promise<{ path: string; pem: string }> {
    return (this.caBundle ??= this.certificateAuthority().then((authority) => {
      const bundlePath = path.join(this.sockets(), 'ca-bundle.pem')
      fs.writeFileSync(bundlePath, [...tls.rootCertificates, authority.certificatePem].join('\n'), { mode: 0o644 })
      return { path: bundlePath, pem: authority.certificatePem }
    }))
  }

  private sockets(): string {
    if (!this.socketDir) {
      this.socketDir = this.options.socketDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'execgate-egress-'))
      fs.mkdirSync(this.socketDir, { recursive: true })
      fs.chmodSync(this.socketDir, 0o755)
    }
    return this.socketDir
  }

  /** Words for `execgate policy`: the caps, and the private ranges exempted when any are. */
  describe(): string[] {
    const lines = [
      `egress caps per run: ${this.caps.maxRequests} requests, ${this.caps.maxBytesIn} bytes ` +
        `in, ${this.caps.maxBytesOut} bytes out, ${this.caps.maxConnectionMs} ms a connection`,
    ]
    if (this.exemptions.cidrs.length)
      lines.push(
        `WARNING: security.egress.allowPrivateRanges exempts ${this.exemptions.cidrs.join(', ')} ` +
          `from the private-address check (for tests only)`,
      )
    if (this.secrets.length)
      lines.push(
        `secrets the gateway adds: ` +
          `${this.secrets.map((secret) => `${secret.name} -> ${secret.hosts.map((host) => host.text).join(', ')}`).join('; ')}`,
      )
    return lines
  }

  async dispose(): Promise<void> {
    for (const handle of [...this.open]) handle.close()
    this.proxy?.close()
    if (this.socketDir && !this.options.socketDir) fs.rmSync(this.socketDir, { recursive: true, force: true })
  }
}
