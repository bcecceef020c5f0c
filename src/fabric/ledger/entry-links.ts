import { JSON_MEDIA_TYPE, TEXT_PLAIN } from './media-types'
import { isShared } from './run-entry-json'
import type { ArtifactLink, ArtifactRef, LedgerEntry, LinkRole, StreamDigest } from './types'

/** Links of references many records share (run-entry-json's `isShared`), by the reference: one object, not one a record. */
const sharedLinks = new WeakMap<object, ArtifactLink>()

function link(ref: ArtifactRef, role: LinkRole): ArtifactLink {
  const known = sharedLinks.get(ref)
  if (known?.role === role) return known
  const made = { sha256: ref.sha256, role, path: ref.path, size: ref.size, mediaType: ref.mediaType }
  if (isShared(ref)) sharedLinks.set(ref, made)
  return made
}

function valueLink(value: { sha256: string; size: number }): ArtifactLink {
  const known = sharedLinks.get(value)
  if (known) return known
  const made: ArtifactLink = { sha256: value.sha256, role: 'value', path: 'value', size: value.size, mediaType: JSON_MEDIA_TYPE }
  if (isShared(value)) sharedLinks.set(value, made)
  return made
}

function streamLink(role: 'stdout' | 'stderr', digest: StreamDigest): ArtifactLink {
  return { sha256: digest.sha256, role, path: role, size: digest.size, mediaType: TEXT_PLAIN }
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
    return entry.previousDocument
      ? [link(entry.document, 'document'), link(entry.previousDocument, 'plan')]
      : [link(entry.document, 'document')]
  }
  // Pushed into one list, not spread from several: the writer calls this for every record it indexes.
  const links: ArtifactLink[] = []
  for (const ref of entry.inputs) links.push(link(ref, 'input'))
  links.push(link(entry.code, 'code'))
  if (entry.planDocument) links.push(link(entry.planDocument, 'plan'))
  for (const ref of entry.outputs) links.push(link(ref, 'output'))
  if (entry.stdout.stored) links.push(streamLink('stdout', entry.stdout))
  if (entry.stderr.stored) links.push(streamLink('stderr', entry.stderr))
  const { value } = entry
  if (value) links.push(valueLink(value))
  return links
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
