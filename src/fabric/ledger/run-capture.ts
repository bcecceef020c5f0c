import crypto, { createHash } from 'node:crypto'
// Single files, not the core's index: the writer thread loads this module, and starts faster without the rest.
import {
  LANGUAGES,
  type EgressRecord,
  type ExecutionRequest,
  type ExecutionResult,
  type Language,
  type SecurityPolicy,
  type WorkspaceFile,
} from '../../core/types'
import type { RunInfo } from '../../core/adapter'
import { workspaceFileBytes } from '../../core/workspace-files'
import { outputFile } from '../../core/output-file'
import { JSON_MEDIA_TYPE, TEXT_PLAIN, codeMediaType, mediaTypeOf } from './media-types'
import type { ArtifactRef, RunLimits, RunRecord, StreamDigest } from './types'

/**
 * A finished run in two steps. `captureRun` runs on the result's path, so it only copies references (strings are
 * immutable; arrays and the value are copied, since the caller owns them once it has the result). `describeRun`
 * runs later, off that path: it hashes, and names the blobs to store.
 */

/**
 * The run's RunInfo. Its policy object is never read from here: the record takes the policy's digest and limits from
 * `CapturedRun.policy`, and a hand-over to the writer thread sends neither (writer-handover.ts).
 */
export type CapturedRunInfo = Omit<RunInfo, 'policy'>

export interface CapturedRun {
  run: CapturedRunInfo
  /** The resolved policy's digest and limits, computed once per policy object (policies are shared between runs). */
  policy?: PolicySummary
  traceId: string
  adapter: string
  status: ExecutionResult['status']
  language?: Language
  code: string
  stdin?: string
  // Empty lists and streams are left out, and usage is flat: every key is cloned to the writer thread and back into
  // an object there, for every record (a trivial run's capture went from 22 keys in 3 objects to 12 in 2).
  /** The request's files; absent when none. */
  inputs?: WorkspaceFile[]
  /** The files the run wrote; absent when none. */
  outputs?: WorkspaceFile[]
  /** The run's rich outputs (charts, tables, display() items) as files, recorded as outputs it generated. */
  generated?: Array<WorkspaceFile & { mediaType: string }>
  /** Absent when empty. */
  stdout?: string
  stderr?: string
  /** `JSON.stringify(value)`, taken at once: the caller may change the value afterwards. */
  valueJson?: string
  wallMs?: number
  cpuMs?: number
  memoryBytes?: number
  durationMs: number
  error?: { type: string; code?: string }
  fallbackFrom?: { adapter: string; reason: string }
  egress?: EgressRecord[]
}

function files(list: unknown): WorkspaceFile[] | undefined {
  if (!Array.isArray(list) || list.length === 0) return undefined
  return list
    .filter(
      (file): file is WorkspaceFile =>
        typeof file === 'object' && file !== null && typeof file.path === 'string' && typeof file.content === 'string',
    )
    .map((file) => ({ path: file.path, content: file.content, ...(file.encoding ? { encoding: file.encoding } : {}) }))
}

/**
 * A run's rich outputs among its output artifacts: `generated:output-1.png`. A workspace path never looks like this
 * (`scheme:` is refused as a URL), so the two never collide.
 */
export const GENERATED_PREFIX = 'generated:'

export function captureRun(result: ExecutionResult, request: ExecutionRequest, run: RunInfo): CapturedRun {
  // The request may be anything a caller sent (an invalid_request run is recorded too): read it defensively.
  const asked = (typeof request === 'object' && request !== null ? request : {}) as Partial<ExecutionRequest>
  let valueJson: string | undefined
  try {
    valueJson = result.value === undefined ? undefined : JSON.stringify(result.value)
  } catch {
    valueJson = undefined
  }
  // The RunInfo itself, not a copy without its policy: the service makes one for every run and never changes it, and
  // an object rest (`{ policy, ...info }`) is a runtime call copying every key, on every run.
  const { policy } = run
  const captured: CapturedRun = {
    run,
    traceId: result.traceId,
    adapter: result.adapter,
    status: result.status,
    code: typeof asked.code === 'string' ? asked.code : '',
    durationMs: result.durationMs,
  }
  if (policy) captured.policy = policySummary(policy)
  if ((LANGUAGES as readonly unknown[]).includes(asked.language)) captured.language = asked.language
  if (typeof asked.stdin === 'string') captured.stdin = asked.stdin
  const inputs = files(asked.files)
  if (inputs) captured.inputs = inputs
  const outputs = files(result.files)
  if (outputs) captured.outputs = outputs
  if (Array.isArray(result.outputs) && result.outputs.length > 0) {
    captured.generated = result.outputs.map((output, index) => {
      const file = outputFile(output, index)
      return { path: `${GENERATED_PREFIX}${file.name}`, content: file.content, encoding: file.encoding, mediaType: file.mediaType }
    })
  }
  if (result.stdout) captured.stdout = result.stdout
  if (result.stderr) captured.stderr = result.stderr
  if (valueJson !== undefined) captured.valueJson = valueJson
  if (result.usage?.wallMs !== undefined) captured.wallMs = result.usage.wallMs
  if (result.usage?.cpuMs !== undefined) captured.cpuMs = result.usage.cpuMs
  if (result.usage?.memoryBytes !== undefined) captured.memoryBytes = result.usage.memoryBytes
  if (result.error) captured.error = { type: result.error.type, ...(result.error.code ? { code: result.error.code } : {}) }
  if (result.fallbackFrom) captured.fallbackFrom = { ...result.fallbackFrom }
  // Copied: the caller owns the result's array once it has the result.
  if (Array.isArray(result.egress) && result.egress.length > 0) captured.egress = result.egress.map((request) => ({ ...request }))
  return captured
}

/** Node's one-shot digest (20.12 and later): no Hash object per call, about half the cost for a record's few hundred bytes. */
const oneShot = (crypto as { hash?: (algorithm: string, data: string | Buffer, encoding: 'hex') => string }).hash

export function sha256(data: string | Buffer): string {
  return oneShot ? oneShot('sha256', data, 'hex') : createHash('sha256').update(data).digest('hex')
}

/** JSON with sorted keys, so equal policies have equal digests whatever order their keys were written in. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined)
    return `{${entries
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`)
      .join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** A resolved policy as a record names it. One object per policy: a batch of runs under one policy is cloned to the writer thread once. */
export interface PolicySummary {
  sha256: string
  limits: RunLimits
  policy: SecurityPolicy
}

const policySummaries = new WeakMap<SecurityPolicy, PolicySummary>()

/** The policy's digest and limits, cached by the policy object: the result's path pays a lookup, not a hash. */
export function policySummary(policy: SecurityPolicy): PolicySummary {
  let summary = policySummaries.get(policy)
  if (!summary) policySummaries.set(policy, (summary = { sha256: sha256(canonicalJson(policy)), limits: limitsOf(policy), policy }))
  return summary
}

function limitsOf(policy: SecurityPolicy): RunLimits {
  return {
    wallTimeMs: policy.wallTimeMs,
    cpuTimeMs: policy.cpuTimeMs,
    memoryMb: policy.memoryMb,
    outputBytes: policy.outputBytes,
    network: policy.network,
    filesystem: policy.filesystem,
    maxProcesses: policy.maxProcesses,
    hostCalls: { maxCount: policy.hostCalls.maxCount, maxTotalMs: policy.hostCalls.maxTotalMs },
  }
}

/** A view of the bytes as a Buffer (a Uint8Array arrives from another thread), without copying them. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/** Bytes to keep in the blob store, by digest: a text's are encoded only when the store does not have them yet. */
export interface BlobWrite {
  sha256: string
  bytes: Buffer | string
  mediaType: string
}

function artifact(path: string, bytes: Buffer, mediaType: string, blobs: Map<string, BlobWrite>): ArtifactRef {
  const digest = sha256(bytes)
  if (!blobs.has(digest)) blobs.set(digest, { sha256: digest, bytes, mediaType })
  return { path, sha256: digest, size: bytes.length, mediaType }
}

/** Digests of short texts seen lately: most runs repeat a code and a value (`1 + 1`, `2`) another run had. */
const textDigests = new Map<string, { sha256: string; size: number }>()
const TEXT_DIGESTS = 4096
const SHORT_TEXT = 4096

/** A text's artifact: its digest from `textDigests` when it is short and was seen, its bytes left to the blob write. */
function textArtifact(path: string, text: string, mediaType: string, blobs: Map<string, BlobWrite>): ArtifactRef {
  let known = text.length <= SHORT_TEXT ? textDigests.get(text) : undefined
  if (!known) {
    known = { sha256: sha256(text), size: Buffer.byteLength(text) }
    if (text.length <= SHORT_TEXT) {
      if (textDigests.size >= TEXT_DIGESTS) textDigests.clear()
      textDigests.set(text, known)
    }
  }
  if (!blobs.has(known.sha256)) blobs.set(known.sha256, { sha256: known.sha256, bytes: text, mediaType })
  return { path, sha256: known.sha256, size: known.size, mediaType }
}

const EMPTY_DIGEST = sha256('')

function stream(name: 'stdout' | 'stderr', text: string, thresholdBytes: number, blobs: Map<string, BlobWrite>): StreamDigest {
  if (text === '') return { sha256: EMPTY_DIGEST, size: 0, stored: false }
  const bytes = Buffer.from(text)
  if (bytes.length < thresholdBytes) return { sha256: sha256(bytes), size: bytes.length, stored: false }
  const ref = artifact(name, bytes, TEXT_PLAIN, blobs)
  return { sha256: ref.sha256, size: ref.size, stored: true }
}

/** `engines` of a record: the hosting Node.js and the adapter's, one object per adapter's engines object. */
const enginesByAdapter = new WeakMap<object, Record<string, string>>()
const NODE_ONLY = { node: process.version }

function enginesOf(engines: Readonly<Record<string, string>> | undefined): Record<string, string> {
  if (!engines) return NODE_ONLY
  let merged = enginesByAdapter.get(engines)
  if (!merged) enginesByAdapter.set(engines, (merged = { node: process.version, ...engines }))
  return merged
}

/** `new Date(ms).toISOString()`, the last one kept: a run's start and end, and runs one after another, often share a ms. */
let lastIsoMs = NaN
let lastIso = ''

function isoTime(ms: number): string {
  if (ms !== lastIsoMs) {
    lastIso = new Date(ms).toISOString()
    lastIsoMs = ms
  }
  return lastIso
}

/** The run's provenance record, and the blobs it references. */
export function describeRun(
  captured: CapturedRun,
  settings: { tenant: string; execgateVersion: string; outputThresholdBytes: number },
): { entry: RunRecord; blobs: BlobWrite[] } {
  const blobs = new Map<string, BlobWrite>()
  const { run } = captured
  const provenance = run.provenance ?? {}
  // Pushed into one list each, not spread from several (most runs have none of them: no empty list made per source).
  const inputs: ArtifactRef[] = []
  for (const file of captured.inputs ?? []) inputs.push(artifact(file.path, workspaceFileBytes(file), mediaTypeOf(file.path), blobs))
  for (const file of run.workspaceReads ?? []) inputs.push(artifact(file.path, asBuffer(file.content), mediaTypeOf(file.path), blobs))
  // By digest only: the bytes stay in the upload store (no copy per run), the record names them.
  for (const file of run.uploads ?? [])
    inputs.push({ path: file.path, sha256: file.sha256, size: file.bytes, mediaType: mediaTypeOf(file.path), upload: true })
  const outputs: ArtifactRef[] = []
  for (const file of captured.outputs ?? []) outputs.push(artifact(file.path, workspaceFileBytes(file), mediaTypeOf(file.path), blobs))
  for (const file of captured.generated ?? []) outputs.push(artifact(file.path, workspaceFileBytes(file), file.mediaType, blobs))
  const code = textArtifact('code', captured.code, codeMediaType(captured.language), blobs)
  const stdout = stream('stdout', captured.stdout ?? '', settings.outputThresholdBytes, blobs)
  const stderr = stream('stderr', captured.stderr ?? '', settings.outputThresholdBytes, blobs)
  let value: RunRecord['value']
  if (captured.valueJson !== undefined) {
    const ref = textArtifact('value', captured.valueJson, JSON_MEDIA_TYPE, blobs)
    value = { sha256: ref.sha256, size: ref.size }
  }
  // Built by assignment, optional fields only when present (conditional spreads made a temporary object each, and
  // this runs for every record on the writer's thread). The key order is the one records always had.
  const entry = {
    kind: 'run',
    runId: run.runId,
    traceId: captured.traceId,
    tenant: settings.tenant,
  } as RunRecord
  if (run.agentType !== undefined) entry.agentType = run.agentType
  if (run.lane) entry.lane = run.lane
  if (provenance.taskId !== undefined) entry.taskId = provenance.taskId
  if (provenance.attempt !== undefined) entry.attempt = provenance.attempt
  if (provenance.planId !== undefined) entry.planId = provenance.planId
  if (provenance.planVersion !== undefined) entry.planVersion = provenance.planVersion
  if (provenance.stepId !== undefined) entry.stepId = provenance.stepId
  if (captured.language) entry.language = captured.language
  entry.adapter = captured.adapter
  if (run.tier !== undefined) entry.tier = run.tier
  entry.execgateVersion = settings.execgateVersion
  entry.code = code
  if (captured.policy) {
    entry.policySha256 = captured.policy.sha256
    entry.limits = captured.policy.limits
    entry.policy = captured.policy.policy
  }
  if (captured.egress) entry.egress = captured.egress
  entry.engines = enginesOf(run.engines)
  entry.startedAt = isoTime(run.startedAt)
  entry.endedAt = isoTime(run.endedAt)
  entry.status = captured.status
  if (captured.error) entry.error = captured.error
  entry.wallMs = Math.round((captured.wallMs ?? captured.durationMs) * 1000) / 1000
  if (captured.cpuMs !== undefined) entry.cpuMs = captured.cpuMs
  if (captured.memoryBytes !== undefined) entry.peakMemoryBytes = captured.memoryBytes
  entry.inputs = inputs
  entry.outputs = outputs
  if (captured.stdin !== undefined) entry.stdin = { sha256: sha256(captured.stdin), size: Buffer.byteLength(captured.stdin) }
  entry.stdout = stdout
  entry.stderr = stderr
  if (value) entry.value = value
  if (captured.fallbackFrom) entry.fallbackFrom = captured.fallbackFrom
  return { entry, blobs: [...blobs.values()] }
}

/** JSON texts of objects many records share (a batch's policy and limits, an adapter's engines), by identity. */
const sharedJson = new WeakMap<object, string>()

function jsonOnce(value: object): string {
  let text = sharedJson.get(value)
  if (text === undefined) sharedJson.set(value, (text = JSON.stringify(value)))
  return text
}

/**
 * `JSON.stringify(entry)` but for its `limits`, `policy` and `engines`, whose JSON is made once per object and spliced
 * in last (a third of a trivial run's record, serialised again for every record before). The same content; only
 * those keys' place differs, which the chain does not care about (a record's hash is over its stored text).
 */
export function runEntryJson(entry: RunRecord): string {
  const { limits, policy, engines } = entry
  if (!limits && !policy && !engines) return JSON.stringify(entry)
  entry.limits = entry.policy = entry.engines = undefined
  let text: string
  try {
    text = JSON.stringify(entry)
  } finally {
    entry.limits = limits
    entry.policy = policy
    entry.engines = engines
  }
  const shared =
    (limits ? `,"limits":${jsonOnce(limits)}` : '') +
    (policy ? `,"policy":${jsonOnce(policy)}` : '') +
    (engines ? `,"engines":${jsonOnce(engines)}` : '')
  return `${text.slice(0, -1)}${shared}}`
}
