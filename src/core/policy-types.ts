/**
 * The contract's policy vocabulary: what a run may do (SecurityPolicy), how a request tightens it, and the admission
 * lanes. Part of the public API through src/core/types.ts, which re-exports every name; imports nothing.
 */

/** The filesystem access a policy grants to the virtual workspace (never the host's filesystem). */
export type FilesystemAccess = 'none' | 'read_only' | 'sandboxed'
export const FILESYSTEM_ACCESS: readonly FilesystemAccess[] = ['none', 'read_only', 'sandboxed']

/**
 * Network access: `'none'`, or an allow-list of rules `[METHOD[,METHOD…] ]host[:port]` with wildcards
 * (`api.example.com`, `*.example.com:443`, `GET,HEAD data.example.org:*`), enforced by the egress gateway
 * (docs/network.md). Without a port a rule allows 80 and 443; everything not allowed is denied.
 */
export type NetworkAccess = 'none' | readonly string[]

/** The limits a policy sets. `explainPolicy` and the adapters' `enforcement` tables are keyed by these. */
export const POLICY_LIMITS = [
  'wallTime',
  'cpuTime',
  'memory',
  'output',
  'network',
  'filesystem',
  'imports',
  'hostCalls',
  'processes',
] as const
export type PolicyLimit = (typeof POLICY_LIMITS)[number]

/** Everything a run is allowed to do. Resolved once per request; adapters read it from the context. */
export interface SecurityPolicy {
  /** Wall-clock limit for the whole run, in milliseconds. */
  readonly wallTimeMs: number
  /** CPU-time limit in milliseconds, where the backend can measure CPU separately from wall time. */
  readonly cpuTimeMs: number
  /** Memory limit in MiB. */
  readonly memoryMb: number
  /** Cap on stdout + stderr + the JSON of the value, in bytes. */
  readonly outputBytes: number
  readonly network: NetworkAccess
  readonly filesystem: FilesystemAccess
  /** Top-level modules the code may import (Python modules, or JavaScript module specifiers). */
  readonly allowedImports: readonly string[]
  /** Host-function budget: calls per run, and their total time. */
  readonly hostCalls: { readonly maxCount: number; readonly maxTotalMs: number }
  /** Maximum processes/threads the code may create, on backends that run real processes. */
  readonly maxProcesses: number
  /** Rich outputs (images, tables, `display()` items) a run may return; more end the run `output_limit`. */
  readonly maxOutputs: number
  /** Bytes all rich outputs together may hold (an image's decoded bytes, a table's JSON). */
  readonly outputsBytes: number
  /** Limits an adapter must enforce (hard or soft) to be allowed to run this request. */
  readonly required: readonly PolicyLimit[]
}

/** What a request may change in the policy: only ever tighter than the caller's profile. */
export type PolicyOverrides = Partial<{
  -readonly [K in keyof SecurityPolicy]: SecurityPolicy[K] extends { readonly maxCount: number }
    ? Partial<{ maxCount: number; maxTotalMs: number }>
    : SecurityPolicy[K]
}>

/**
 * Admission lanes: `interactive` when a person is waiting on the answer (voice and chat turns, MCP tool calls),
 * `batch` for everything else. Interactive work gets a reserved share of every adapter's slots and goes first.
 */
export const LANES = ['interactive', 'batch'] as const
export type Lane = (typeof LANES)[number]
