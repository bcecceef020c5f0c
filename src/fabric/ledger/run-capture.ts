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
import { outputFile } from '../../core/output-file'
import { canonicalJson, sha256 } from './digest'

/**
 * A finished run in two steps. `captureRun` runs on the result's path, so it only copies references (strings are
 * immutable; arrays and the value are copied, since the caller owns them once it has the result). `describeRun`
 * (run-record.ts) runs later, off that path: it hashes, and names the blobs to store.
 */

/**
 * The run's RunInfo. Its policy object is never read from here: the record takes the policy's digest from
 * `CapturedRun.policy`, and a hand-over to the writer thread sends no policy object (writer-handover.ts).
 */
export type CapturedRunInfo = Omit<RunInfo, 'policy'>

export interface CapturedRun {
  run: CapturedRunInfo
  /** The resolved policy's digest and canonical JSON, made once per policy object (policies are shared between runs). */
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
 * A resolved policy as a record names it: its digest, and the canonical JSON that digest is of. One object per
 * policy: a batch of runs under one policy is cloned to the writer thread once, and the writer stores the text once
 * per digest (stored-policies.ts), not in every record.
 */
export interface PolicySummary {
  sha256: string
  text: string
}

const policySummaries = new WeakMap<SecurityPolicy, PolicySummary>()

/** The policy's digest and text, cached by the policy object: the result's path pays a lookup, not a hash. */
export function policySummary(policy: SecurityPolicy): PolicySummary {
  let summary = policySummaries.get(policy)
  if (!summary) {
    const text = canonicalJson(policy)
    policySummaries.set(policy, (summary = { sha256: sha256(text), text }))
  }
  return summary
}

// For the tests and the bench, which name the digest where they always did.
export { canonicalJson, sha256 } from './digest'
