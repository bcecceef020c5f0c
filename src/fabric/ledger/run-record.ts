import { workspaceFileBytes } from '../../core/workspace-files'
import { sha256 } from './digest'
import { JSON_MEDIA_TYPE, TEXT_PLAIN, codeMediaType, mediaTypeOf } from './media-types'
import type { CapturedRun } from './run-capture'
import { EMPTY_SHA256, omittedDefault, shared } from './run-entry-json'
import type { ArtifactRef, RunRecord, StreamDigest } from './types'

/** A captured run's record (`describeRun`), off the result's path: its hashing, and the blobs it names. */

/** The record's text leaves the empty lists and streams out (runEntryJson); a read puts them back. */
const NO_REFS: ArtifactRef[] = omittedDefault([])

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

const EMPTY_STREAM: StreamDigest = omittedDefault({ sha256: EMPTY_SHA256, size: 0, stored: false })

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
    // The policy by digest only: its text is stored once (stored-policies.ts), and a read fills in `policy` and `limits`.
    policySha256: policy?.sha256,
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
