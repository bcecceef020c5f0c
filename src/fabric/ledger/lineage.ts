import { parseBody } from './chain'
import { entryId, linksOf } from './entry-links'
import type { LedgerRecordStore } from './record-store'
import { GENERATED_ROLES, type ArtifactLink, type LedgerEntry, type LinkRole } from './types'

/** A run or a plan version, as lineage lists it. */
export interface ActivitySummary {
  /** The record's id: the run id, or `plan:<planId>@<version>`. */
  id: string
  kind: LedgerEntry['kind']
  taskId?: string
  attempt?: number
  planId?: string
  planVersion?: number
  stepId?: string
  /** The sandbox that saved the file (sandbox files). */
  sandboxId?: string
  adapter?: string
  language?: string
  status?: string
  startedAt?: string
  /** The code that ran (runs), or the plan document (plan versions). */
  codeSha256?: string
}

export interface LineageEntity {
  sha256: string
  size: number
  mediaType: string
  /** The names the tenant's records gave these bytes (a file path, `code`, `value`, …). */
  paths: string[]
}

/** PROV's relations between what ran (activities) and the artifacts (entities). */
export interface LineageRelation {
  relation: 'used' | 'wasGeneratedBy'
  activity: string
  entity: string
  role: LinkRole
}

export interface LineageGraph {
  activities: ActivitySummary[]
  entities: LineageEntity[]
  relations: LineageRelation[]
}

export interface Lineage {
  artifact: LineageEntity
  /** What produced the artifact, what that used, and so on back to the code and the first inputs. */
  ancestors: LineageGraph
  /** What used the artifact, what that generated, and so on. */
  descendants: LineageGraph
  /** A walk stopped at `maxDepth` or `maxActivities`: there is more than shown. */
  truncated: boolean
}

export interface LineageLimits {
  /** Steps of run → artifact to follow each way. @default 32 */
  maxDepth?: number
  /** Runs and plan versions listed each way. @default 1000 */
  maxActivities?: number
}

function summary(id: string, entry: LedgerEntry): ActivitySummary {
  if (entry.kind === 'sandbox_file')
    return { id, kind: entry.kind, sandboxId: entry.sandboxId, adapter: entry.adapter, startedAt: entry.recordedAt }
  if (entry.kind === 'plan_version')
    return {
      id,
      kind: entry.kind,
      planId: entry.planId,
      planVersion: entry.version,
      startedAt: entry.recordedAt,
      codeSha256: entry.document.sha256,
    }
  return {
    id,
    kind: entry.kind,
    ...(entry.taskId !== undefined ? { taskId: entry.taskId, attempt: entry.attempt } : {}),
    ...(entry.planId !== undefined ? { planId: entry.planId, planVersion: entry.planVersion, stepId: entry.stepId } : {}),
    adapter: entry.adapter,
    ...(entry.language ? { language: entry.language } : {}),
    status: entry.status,
    startedAt: entry.startedAt,
    codeSha256: entry.code.sha256,
  }
}

class GraphBuilder {
  readonly activities: ActivitySummary[] = []
  private readonly entities = new Map<string, LineageEntity>()
  private readonly relations = new Map<string, LineageRelation>()

  entity(link: Pick<ArtifactLink, 'sha256' | 'size' | 'mediaType' | 'path'>): void {
    const known = this.entities.get(link.sha256)
    if (!known) this.entities.set(link.sha256, { sha256: link.sha256, size: link.size, mediaType: link.mediaType, paths: [link.path] })
    else if (!known.paths.includes(link.path)) known.paths.push(link.path)
  }

  relate(activity: string, link: ArtifactLink): void {
    const relation = GENERATED_ROLES.includes(link.role) ? 'wasGeneratedBy' : 'used'
    this.relations.set(`${relation} ${activity} ${link.sha256} ${link.role}`, { relation, activity, entity: link.sha256, role: link.role })
    this.entity(link)
  }

  build(): LineageGraph {
    return { activities: this.activities, entities: [...this.entities.values()], relations: [...this.relations.values()] }
  }
}

/**
 * One direction of an artifact's lineage, breadth first over the store's link index: `ancestors` goes from an
 * artifact to the records that generated it and on to what they used; `descendants` from an artifact to the records
 * that used it and on to what they generated. Tenant-scoped: only the tenant's records are read.
 */
async function walk(
  store: LedgerRecordStore,
  tenant: string,
  start: string,
  direction: 'ancestors' | 'descendants',
  limits: Required<LineageLimits>,
) {
  const graph = new GraphBuilder()
  const seenArtifacts = new Set([start])
  const seenRecords = new Set<number>()
  let frontier = [start]
  let truncated = false
  for (let depth = 0; frontier.length > 0; depth++) {
    if (depth >= limits.maxDepth) {
      truncated = true
      break
    }
    let seqs = (await store.linkedSeqs(tenant, frontier, direction === 'ancestors' ? 'generated' : 'used')).filter(
      (seq) => !seenRecords.has(seq),
    )
    if (seqs.length === 0) break
    if (seenRecords.size + seqs.length > limits.maxActivities) {
      seqs = seqs.slice(0, Math.max(0, limits.maxActivities - seenRecords.size))
      truncated = true
    }
    const reached = new Set(frontier)
    const next: string[] = []
    for (const record of await store.bySeq(tenant, seqs)) {
      seenRecords.add(record.seq)
      const { entry } = parseBody(record)
      const id = entryId(entry)
      graph.activities.push(summary(id, entry))
      for (const link of linksOf(entry)) {
        const generated = GENERATED_ROLES.includes(link.role)
        // The edge back to where we came from, and every edge onward (up through what it used, or down through
        // what it generated).
        const onward = direction === 'ancestors' ? !generated : generated
        if (onward || reached.has(link.sha256)) graph.relate(id, link)
        if (onward && !seenArtifacts.has(link.sha256)) {
          seenArtifacts.add(link.sha256)
          next.push(link.sha256)
        }
      }
    }
    if (truncated) break
    frontier = next
  }
  return { graph: graph.build(), truncated }
}

/** The lineage of one of the tenant's artifacts; undefined when none of the tenant's records names it. */
export async function traceLineage(
  store: LedgerRecordStore,
  tenant: string,
  sha256: string,
  limits: LineageLimits = {},
): Promise<Lineage | undefined> {
  const link = await store.artifact(tenant, sha256)
  if (!link) return undefined
  const bounded = { maxDepth: limits.maxDepth ?? 32, maxActivities: limits.maxActivities ?? 1000 }
  const [ancestors, descendants] = await Promise.all([
    walk(store, tenant, sha256, 'ancestors', bounded),
    walk(store, tenant, sha256, 'descendants', bounded),
  ])
  return {
    artifact: { sha256, size: link.size, mediaType: link.mediaType, paths: [link.path] },
    ancestors: ancestors.graph,
    descendants: descendants.graph,
    truncated: ancestors.truncated || descendants.truncated,
  }
}
