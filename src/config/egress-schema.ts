import { formats } from './formats'

/**
 * The egress gateway's keys (`security.egress.*`) and the secrets it adds to requests (`security.secrets`).
 * Composed into the schema by src/config/schema.ts; docs/network.md explains each.
 */
export interface EgressConfig {
  /** Requests (and HTTPS tunnels) one run may open. @default 50 @env EXECGATE_SECURITY_EGRESS_MAX_REQUESTS */
  maxRequests: number
  /** Bytes one run may receive, over all its requests. @default 10485760 @env EXECGATE_SECURITY_EGRESS_MAX_BYTES_IN */
  maxBytesIn: number
  /** Bytes one run may send, over all its requests. @default 1048576 @env EXECGATE_SECURITY_EGRESS_MAX_BYTES_OUT */
  maxBytesOut: number
  /**
   * Longest one connection (a request and its answer, or a tunnel) may last, in ms. @default 10000 @env
   * EXECGATE_SECURITY_EGRESS_MAX_CONNECTION_MS */
  maxConnectionMs: number
  /**
   * Longest the gateway waits for an upstream to accept a connection, in ms. @default 3000 @env
   * EXECGATE_SECURITY_EGRESS_CONNECT_TIMEOUT_MS */
  connectTimeoutMs: number
  /**
   * CIDRs exempt from the private-address check, for tests against loopback servers ONLY (`127.0.0.0/8`). Named in
   * `execgate policy` output whenever set. @default [] @env EXECGATE_SECURITY_EGRESS_ALLOW_PRIVATE_RANGES
   */
  allowPrivateRanges: string[]
}

export const EGRESS_SCHEMA = {
  maxRequests: { doc: 'Requests per run through the egress gateway', format: formats.positiveInt, default: 50 },
  maxBytesIn: { doc: 'Bytes a run may receive through the gateway', format: formats.positiveInt, default: 10 * 1024 * 1024 },
  maxBytesOut: { doc: 'Bytes a run may send through the gateway', format: formats.positiveInt, default: 1024 * 1024 },
  maxConnectionMs: { doc: 'Longest one connection may last (ms)', format: formats.positiveInt, default: 10_000 },
  connectTimeoutMs: { doc: 'Longest wait for an upstream to accept (ms)', format: formats.positiveInt, default: 3_000 },
  allowPrivateRanges: {
    doc: 'CIDRs exempt from the private-address check (tests only)',
    format: formats.stringList,
    default: [] as string[],
  },
}
