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

/**
 * JSON texts of objects many records share, by identity: a policy and its limits, an adapter's engines, a code's and a
 * value's references, the empty stream, the empty list. Registered when made (`shared`); a policy object arrives
 * from the writer thread's hand-over once a batch, and is registered as it is spliced.
 */
const sharedJson = new WeakMap<object, string>()
const NO_TEXT = ''

/** Marks an object that many records name as it is (never changed after): its JSON is made once. */
function shared<T extends object>(value: T): T {
  sharedJson.set(value, NO_TEXT)
  return value
}

const NO_REFS: ArtifactRef[] = shared([])

/** Whether many records name this object as it is (a repeated code's reference, a value's digest, the empty list). */
export const isShared = (value: object): boolean => sharedJson.has(value)

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
  if (!summary) policySummaries.set(policy, (summary = { sha256: sha256(canonicalJson(policy)), limits: shared(limitsOf(policy)), policy }))
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

/**
 * Short texts seen lately (most runs repeat a code and a value, `1 + 1`, `2`, another run had): their digest, and the
 * record's references to them as shared objects, so `runEntryJson` serialises each once, not once a record.
 */
interface KnownText {
  sha256: string
  size: number
  /** The text's ArtifactRef by path and media type (`code` as python, `value` as JSON). */
  refs: Map<string, ArtifactRef>
  /** `{sha256, size}`: a record's `value`. */
  digest?: { sha256: string; size: number }
}
const textDigests = new Map<string, KnownText>()
const TEXT_DIGESTS = 4096
const SHORT_TEXT = 4096

function knownText(text: string): KnownText {
  let known = text.length <= SHORT_TEXT ? textDigests.get(text) : undefined
  if (!known) {
    known = { sha256: sha256(text), size: Buffer.byteLength(text), refs: new Map() }
    if (text.length <= SHORT_TEXT) {
      if (textDigests.size >= TEXT_DIGESTS) textDigests.clear()
      textDigests.set(text, known)
    }
  }
  return known
}

/** A text's artifact (one shared object per text, path and media type), its bytes left to the blob write. */
function textArtifact(path: string, text: string, mediaType: string, blobs: Map<string, BlobWrite>): ArtifactRef {
  const known = knownText(text)
  const key = `${path}\n${mediaType}`
  let ref = known.refs.get(key)
  if (!ref) known.refs.set(key, (ref = shared({ path, sha256: known.sha256, size: known.size, mediaType })))
  if (!blobs.has(known.sha256)) blobs.set(known.sha256, { sha256: known.sha256, bytes: text, mediaType })
  return ref
}

const EMPTY_STREAM: StreamDigest = shared({ sha256: sha256(''), size: 0, stored: false })

function stream(name: 'stdout' | 'stderr', text: string, thresholdBytes: number, blobs: Map<string, BlobWrite>): StreamDigest {
  if (text === '') return EMPTY_STREAM
  const bytes = Buffer.from(text)
  if (bytes.length < thresholdBytes) return { sha256: sha256(bytes), size: bytes.length, stored: false }
  const ref = artifact(name, bytes, TEXT_PLAIN, blobs)
  return { sha256: ref.sha256, size: ref.size, stored: true }
}

/** `engines` of a record: the hosting Node.js and the adapter's, one object per adapter's engines object. */
const enginesByAdapter = new WeakMap<object, Record<string, string>>()
const NODE_ONLY = shared({ node: process.version })

function enginesOf(engines: Readonly<Record<string, string>> | undefined): Record<string, string> {
  if (!engines) return NODE_ONLY
  let merged = enginesByAdapter.get(engines)
  if (!merged) enginesByAdapter.set(engines, (merged = shared({ node: process.version, ...engines })))
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

/**
 * The run's provenance record; the blobs it references are added to `blobs` (the batch's, by digest: a code or a value
 * many runs repeat is one write, and no list is made a record).
 */
export function describeRun(
  captured: CapturedRun,
  tenant: string,
  settings: { execgateVersion: string; outputThresholdBytes: number },
  blobs: Map<string, BlobWrite>,
): RunRecord {
  const { run } = captured
  const provenance = run.provenance
  // Lists made only for a run that has some (most have none: they share NO_REFS).
  let inputs = NO_REFS
  if (captured.inputs || run.workspaceReads || run.uploads) {
    inputs = []
    for (const file of captured.inputs ?? []) inputs.push(artifact(file.path, workspaceFileBytes(file), mediaTypeOf(file.path), blobs))
    for (const file of run.workspaceReads ?? []) inputs.push(artifact(file.path, asBuffer(file.content), mediaTypeOf(file.path), blobs))
    // By digest only: the bytes stay in the upload store (no copy per run), the record names them.
    for (const file of run.uploads ?? [])
      inputs.push({ path: file.path, sha256: file.sha256, size: file.bytes, mediaType: mediaTypeOf(file.path), upload: true })
  }
  let outputs = NO_REFS
  if (captured.outputs || captured.generated) {
    outputs = []
    for (const file of captured.outputs ?? []) outputs.push(artifact(file.path, workspaceFileBytes(file), mediaTypeOf(file.path), blobs))
    for (const file of captured.generated ?? []) outputs.push(artifact(file.path, workspaceFileBytes(file), file.mediaType, blobs))
  }
  let value: RunRecord['value']
  if (captured.valueJson !== undefined) {
    textArtifact('value', captured.valueJson, JSON_MEDIA_TYPE, blobs)
    const known = knownText(captured.valueJson)
    value = known.digest ??= shared({ sha256: known.sha256, size: known.size })
  }
  const { policy } = captured
  // One literal with every key, in the order records always had: one object of one shape, where adding the optional
  // keys one by one regrew its property store several times a record (the writer's garbage). Absent ones are
  // undefined, which JSON leaves out as it leaves out a missing key.
  return {
    kind: 'run',
    runId: run.runId,
    traceId: captured.traceId,
    tenant,
    agentType: run.agentType,
    lane: run.lane || undefined,
    taskId: provenance?.taskId,
    attempt: provenance?.attempt,
    planId: provenance?.planId,
    planVersion: provenance?.planVersion,
    stepId: provenance?.stepId,
    language: captured.language || undefined,
    adapter: captured.adapter,
    tier: run.tier,
    execgateVersion: settings.execgateVersion,
    code: textArtifact('code', captured.code, codeMediaType(captured.language), blobs),
    policySha256: policy?.sha256,
    limits: policy?.limits,
    policy: policy?.policy,
    egress: captured.egress,
    engines: enginesOf(run.engines),
    startedAt: isoTime(run.startedAt),
    endedAt: isoTime(run.endedAt),
    status: captured.status,
    error: captured.error,
    wallMs: Math.round((captured.wallMs ?? captured.durationMs) * 1000) / 1000,
    cpuMs: captured.cpuMs,
    peakMemoryBytes: captured.memoryBytes,
    inputs,
    outputs,
    stdin: captured.stdin === undefined ? undefined : { sha256: sha256(captured.stdin), size: Buffer.byteLength(captured.stdin) },
    stdout: stream('stdout', captured.stdout ?? '', settings.outputThresholdBytes, blobs),
    stderr: stream('stderr', captured.stderr ?? '', settings.outputThresholdBytes, blobs),
    value,
    fallbackFrom: captured.fallbackFrom,
    planDocument: undefined,
  }
}

/** The keys of a run's record that may hold a shared object, spliced after the rest in this order. */
const SPLICED = ['limits', 'policy', 'engines', 'code', 'inputs', 'outputs', 'stdout', 'stderr', 'value'] as const
/** SPLICED's first keys, kept by identity even when not registered. */
const ALWAYS_KEPT = 3

/**
 * `JSON.stringify(entry)` but for its keys that hold shared objects (SPLICED), whose JSON is made once per object and
 * spliced in last: a trivial run's record is ~1.4 KB of which all but ~0.4 KB is such objects, serialised again for
 * every record before (a third of the writer's JSON then, two thirds once the code, value and streams were shared).
 * The same content; only those keys' place differs, which the chain does not care about (a record's hash is over
 * its stored text).
 */
export function runEntryJson(entry: RunRecord): string {
  const fields = entry as unknown as Record<string, unknown>
  const taken = lastTaken
  let same = true
  let any = false
  for (let at = 0; at < SPLICED.length; at++) {
    const value = fields[SPLICED[at]!]
    if (typeof value !== 'object' || value === null) {
      if (taken[at] !== undefined) same = false
      taken[at] = undefined
      continue
    }
    // A policy, its limits and the engines are kept whatever object holds them: in the writer thread they are the
    // hand-over's copies (one per policy and hand-over, writer-handover.ts), never registered.
    if (at >= ALWAYS_KEPT && !sharedJson.has(value)) {
      if (taken[at] !== undefined) same = false
      taken[at] = undefined
      continue
    }
    if (taken[at] !== value) same = false
    taken[at] = value
    fields[SPLICED[at]!] = undefined
    any = true
  }
  if (!any) return JSON.stringify(entry)
  let text: string
  try {
    text = JSON.stringify(entry)
  } finally {
    for (let at = 0; at < SPLICED.length; at++) if (taken[at] !== undefined) fields[SPLICED[at]!] = taken[at]
  }
  // Records one after another name the same shared objects: the text spliced after the rest is then the last one's.
  if (!same) {
    let tail = ''
    for (let at = 0; at < SPLICED.length; at++) {
      const value = taken[at]
      if (value === undefined) continue
      let json = sharedJson.get(value)
      if (!json) sharedJson.set(value, (json = JSON.stringify(value)))
      tail += `,"${SPLICED[at]}":${json}`
    }
    lastTail = flat(tail)
  }
  return `${text.slice(0, -1)}${lastTail}}`
}

/** The shared objects the last record's text spliced (by SPLICED's index), and that text. */
const lastTaken: (object | undefined)[] = new Array<object | undefined>(SPLICED.length).fill(undefined)
let lastTail = ''

/** The string as one piece of memory: kept for many records, it is not re-walked as a tree of pieces each time. */
function flat(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string
}
