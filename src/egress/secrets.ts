import fs from 'node:fs'
import { Transform, type TransformCallback } from 'node:stream'
import { matchHostRule, parseHostRule, type HostRule } from '../policy/network-rules'

/**
 * `security.secrets.<name>`: a credential the gateway adds to requests to its hosts, so the code never holds it.
 * The value comes from an environment variable or a file read at start-up; it goes into one header, through a
 * template (`Bearer {value}`).
 */
export interface SecretDefinition {
  /** Environment variable holding the value (read once, at start-up). */
  env?: string
  /** File holding the value (trailing newline dropped). */
  file?: string
  /** Hosts the secret may go to, as network rules (`api.example.com`, `*.example.com:443`). */
  hosts: readonly string[]
  /** @default 'authorization' */
  header?: string
  /** `{value}` is replaced by the secret. @default 'Bearer {value}' */
  template?: string
}

export interface LoadedSecret {
  readonly name: string
  readonly value: string
  readonly hosts: readonly HostRule[]
  readonly header: string
  readonly headerValue: string
}

const HEADER = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/

/** Reads every secret's value; throws naming the secret when one is missing or malformed (a start-up error). */
export function loadSecrets(
  definitions: Readonly<Record<string, SecretDefinition>>,
  environment: NodeJS.ProcessEnv = process.env,
): LoadedSecret[] {
  return Object.entries(definitions).map(([name, definition]) => {
    const fail = (detail: string) => new Error(`security.secrets.${name}: ${detail}`)
    if (typeof definition !== 'object' || definition === null) throw fail('must be an object { env | file, hosts, header?, template? }')
    if (!!definition.env === !!definition.file) throw fail('needs exactly one of "env" (a variable name) or "file" (a path)')
    let value: string | undefined
    if (definition.env) value = environment[definition.env]
    else {
      try {
        value = fs.readFileSync(definition.file!, 'utf8').replace(/\r?\n$/, '')
      } catch (error) {
        throw fail(`cannot read ${definition.file}: ${(error as Error).message}`)
      }
    }
    if (!value)
      throw fail(definition.env ? `the environment variable ${definition.env} is empty or not set` : `${definition.file} is empty`)
    if (/[\r\n]/.test(value)) throw fail('the value has a line break, which cannot go into a header')
    if (!Array.isArray(definition.hosts) || definition.hosts.length === 0) throw fail('"hosts" must list the hosts the secret may go to')
    const header = (definition.header ?? 'authorization').toLowerCase()
    if (!HEADER.test(header)) throw fail(`"${header}" is not a header name`)
    const template = definition.template ?? 'Bearer {value}'
    if (!template.includes('{value}')) throw fail('"template" must contain {value}')
    let hosts: HostRule[]
    try {
      hosts = definition.hosts.map(parseHostRule)
    } catch (error) {
      throw fail((error as Error).message)
    }
    return { name, value, hosts, header, headerValue: template.split('{value}').join(value) }
  })
}

/** The headers the gateway adds to a request to `host:port`: only secrets whose hosts match. */
export function secretHeaders(secrets: readonly LoadedSecret[], host: string, port: number): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const secret of secrets) {
    if (matchHostRule(secret.hosts, host, port, undefined)) headers[secret.header] = secret.headerValue
  }
  return headers
}

/** Whether any secret goes to `host:port` (its TLS must then be re-terminated to add the header). */
export function hasSecretFor(secrets: readonly LoadedSecret[], host: string, port: number): boolean {
  return secrets.some((secret) => matchHostRule(secret.hosts, host, port, undefined))
}

/**
 * Replaces every secret value in `text` with asterisks of the same length (a second layer: an upstream that
 * echoes its request, output that somehow holds one). Same length, so a Content-Length stays true.
 */
export function scrubSecrets(text: string, secrets: readonly LoadedSecret[]): string {
  let out = text
  for (const secret of secrets) if (out.includes(secret.value)) out = out.split(secret.value).join('*'.repeat(secret.value.length))
  return out
}

/** `scrubSecrets` over a byte stream: keeps the last (longest value − 1) bytes back so a value split across chunks is caught. */
export class SecretScrubber extends Transform {
  private carry: Buffer = Buffer.alloc(0)
  private readonly keep: number
  private readonly values: Buffer[]

  constructor(secrets: readonly LoadedSecret[]) {
    super()
    this.values = secrets.map((secret) => Buffer.from(secret.value, 'utf8'))
    this.keep = Math.max(0, ...this.values.map((value) => value.length - 1))
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const data = this.mask(Buffer.concat([this.carry, chunk]))
    const cut = Math.max(0, data.length - this.keep)
    this.carry = data.subarray(cut)
    callback(null, data.subarray(0, cut))
  }

  override _flush(callback: TransformCallback): void {
    callback(null, this.mask(this.carry))
  }

  private mask(data: Buffer): Buffer {
    for (const value of this.values) {
      let at = data.indexOf(value)
      while (at !== -1) {
        data.fill(0x2a, at, at + value.length)
        at = data.indexOf(value, at + value.length)
      }
    }
    return data
  }
}
