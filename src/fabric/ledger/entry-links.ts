import { JSON_MEDIA_TYPE, TEXT_PLAIN } from './media-types'
import type { ArtifactLink, ArtifactRef, LedgerEntry, LinkRole, StreamDigest } from './types'

function link(ref: ArtifactRef, role: LinkRole): ArtifactLink {
  return { sha256: ref.sha256, role, path: ref.path, size: ref.size, mediaType: ref.mediaType }
}

function streamLink(role: 'stdout' | 'stderr', digest: StreamDigest): ArtifactLink[] {
  return digest.stored ? [{ sha256: digest.sha256, role, path: role, size: digest.size, mediaType: TEXT_PLAIN }] : []
}

/**
 * The stored artifacts a record references, each with its PROV role: what a run used (its inputs, its code, its plan
 * version's document) and what it generated (its files, its long streams, its value); what a plan version revised
 * and the document it generated. Every store indexes exactly these, so lineage, retention and access agree.
 */
export function linksOf(entry: LedgerEntry): ArtifactLink[] {
  // The sandbox generated the file it saved; what it used is not known to the ledger (its execs are runs of their own).
  if (entry.kind === 'sandbox_file') return [link(entry.file, 'output')]
  if (entry.kind === 'plan_version') {
    return [link(entry.document, 'document'), ...(entry.previousDocument ? [link(entry.previousDocument, 'plan')] : [])]
  }
  return [
    ...entry.inputs.map((ref) => link(ref, 'input')),
    link(entry.code, 'code'),
    ...(entry.planDocument ? [link(entry.planDocument, 'plan')] : []),
    ...entry.outputs.map((ref) => link(ref, 'output')),
    ...streamLink('stdout', entry.stdout),
    ...streamLink('stderr', entry.stderr),
    ...(entry.value
      ? [{ sha256: entry.value.sha256, role: 'value' as const, path: 'value', size: entry.value.size, mediaType: JSON_MEDIA_TYPE }]
      : []),
  ]
}

/** The record's id: the run id, `plan:<planId>@<version>`, or `sandbox:<id>/<path>@<sha256>`. */
export function entryId(entry: LedgerEntry): string {
  if (entry.kind === 'sandbox_file') return sandboxFileId(entry.sandboxId, entry.file.path, entry.file.sha256)
  return entry.kind === 'run' ? entry.runId : planVersionId(entry.planId, entry.version)
}

/** The same bytes saved from the same path of the same sandbox are one record: a retried save appends nothing. */
export function sandboxFileId(sandboxId: string, path: string, sha256: string): string {
  return `sandbox:${sandboxId}/${path}@${sha256}`
}

export function planVersionId(planId: string, version: number): string {
  return `plan:${planId}@${version}`
}
