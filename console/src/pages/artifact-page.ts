import { useEffect, useState } from 'preact/hooks'
import type { Lineage, LineageActivity, LineageEntity, LineageRelation } from '../api-types-fabric'
import { ArtifactPreview } from '../components/artifact-preview'
import { DagGraph, type GraphEdge, type GraphNode } from '../components/dag-graph'
import { Badge, ErrorMessage, Loading } from '../components/feedback'
import { ArtifactLink, RunRecordLoader } from '../components/run-record'
import { formatBytes, formatTime, shortId } from '../format'
import { html } from '../html'
import type { PageProps } from '../pages'
import { href, navigate } from '../router'

/** Runs and plan versions asked for each way: a value like `2` made by many runs would otherwise draw hundreds. */
const MOST_ACTIVITIES = 40

const RUN_TONES: Record<string, string> = { ok: 'good', error: 'bad', timeout: 'warn', cancelled: 'warn' }

interface Merged {
  activities: LineageActivity[]
  entities: LineageEntity[]
  relations: LineageRelation[]
}

/** Ancestors and descendants as one graph, each run, artifact and relation once. */
function merge(lineage: Lineage): Merged {
  const activities = new Map<string, LineageActivity>()
  const entities = new Map<string, LineageEntity>([[lineage.artifact.sha256, lineage.artifact]])
  const relations = new Map<string, LineageRelation>()
  for (const graph of [lineage.ancestors, lineage.descendants]) {
    for (const item of graph.activities) activities.set(item.id, item)
    for (const item of graph.entities) {
      // The same bytes may carry other names on the other side (a file one run wrote, another run's input).
      const known = entities.get(item.sha256)
      entities.set(item.sha256, known ? { ...known, paths: [...new Set([...known.paths, ...item.paths])] } : item)
    }
    for (const item of graph.relations) relations.set(`${item.relation} ${item.activity} ${item.entity} ${item.role}`, item)
  }
  return { activities: [...activities.values()], entities: [...entities.values()], relations: [...relations.values()] }
}

const entityName = (entity: LineageEntity) => entity.paths[0] ?? shortId(entity.sha256, 12)
const activityName = (activity: LineageActivity) =>
  activity.kind === 'plan_version'
    ? `plan ${shortId(activity.planId ?? '')} v${activity.planVersion}`
    : activity.kind === 'sandbox_file'
      ? `sandbox ${shortId(activity.sandboxId ?? '')}`
      : activity.stepId
        ? `step ${activity.stepId}`
        : `run ${shortId(activity.id)}`
/** Where an activity that is not a run leads: its plan, or the sandbox a file was saved from. */
const activityPage = (activity: LineageActivity) =>
  activity.kind === 'plan_version' ? `plans/${activity.planId}` : `sandboxes/${activity.sandboxId}`

/** An artifact: its content and its lineage, back to the code and inputs that produced it and on to what used it. */
export function ArtifactPage({ api, params }: PageProps) {
  const sha256 = params.sha256!
  const [lineage, setLineage] = useState<Lineage>()
  const [error, setError] = useState<unknown>()
  const [selectedRun, setSelectedRun] = useState<string>()
  useEffect(() => {
    api.get<Lineage>(`/v1/artifacts/${encodeURIComponent(sha256)}/lineage?maxActivities=${MOST_ACTIVITIES}`).then(setLineage, setError)
  }, [api, sha256])

  const heading = html`<p><a href=${href('artifacts')}>← Artifacts</a></p>
    <h1 id="page-title" tabindex="-1">Artifact <code class="digest">${sha256}</code></h1>`
  if (!lineage) return html`${heading}${error ? html`<${ErrorMessage} error=${error} />` : html`<${Loading} what="the artifact" />`}`

  const graph = merge(lineage)
  const byId = new Map(graph.activities.map((activity) => [activity.id, activity]))
  const select = (nodeId: string) => {
    if (nodeId.startsWith('sha256:')) return nodeId.slice(7) === sha256 ? undefined : navigate(`artifacts/${nodeId.slice(7)}`)
    const activity = byId.get(nodeId.slice(4))
    if (activity && activity.kind !== 'run') return navigate(activityPage(activity))
    setSelectedRun(nodeId.slice(4))
    // The record appears under the graph: bring it into view for the mouse user who clicked.
    setTimeout(() => document.getElementById('selected-run')?.scrollIntoView({ block: 'nearest' }), 50)
  }
  const nodes: GraphNode[] = [
    ...graph.activities.map((activity): GraphNode => ({
      id: `run:${activity.id}`,
      label: activityName(activity),
      detail:
        activity.kind === 'plan_version'
          ? 'plan version'
          : activity.kind === 'sandbox_file'
            ? `saved from a sandbox · ${activity.adapter ?? ''}`
            : `${activity.adapter ?? ''} · ${activity.status ?? ''}`,
      tone: activity.kind === 'run' ? (RUN_TONES[activity.status ?? ''] ?? 'bad') : 'plain',
      state: activity.kind,
      emphasis: activity.id === selectedRun,
    })),
    ...graph.entities.map((entity): GraphNode => ({
      id: `sha256:${entity.sha256}`,
      label: entityName(entity),
      detail: `${entity.mediaType} · ${formatBytes(entity.size)}`,
      tone: 'plain',
      shape: 'pill',
      state: 'artifact',
      emphasis: entity.sha256 === sha256,
    })),
  ]
  // PROV's direction of time: an artifact a run used comes before it, one it generated after it.
  const edges: GraphEdge[] = graph.relations.map((relation) =>
    relation.relation === 'used'
      ? { from: `sha256:${relation.entity}`, to: `run:${relation.activity}`, dashed: true }
      : { from: `run:${relation.activity}`, to: `sha256:${relation.entity}` },
  )
  const generatedBy = lineage.ancestors.relations
    .filter((relation) => relation.relation === 'wasGeneratedBy' && relation.entity === sha256)
    .map((relation) => byId.get(relation.activity))
    .filter((item): item is LineageActivity => !!item)
  const description =
    `${graph.activities.length} runs and ${graph.entities.length} artifacts; ` +
    `this artifact was generated by ${generatedBy.map(activityName).join(', ') || 'no recorded run'}.`

  return html`
    ${heading}
    <p class="lede">Generated by ${
      generatedBy.length
        ? generatedBy.map(
            (activity, index) => html`${index ? ', ' : ''}
      <a href=${href(activity.kind === 'run' ? `runs/${activity.id}` : activityPage(activity))}>${activityName(activity)}</a>`,
          )
        : 'no run of yours on record'
    }.</p>
    <section class="panel" aria-labelledby="preview-title">
      <h2 id="preview-title">Content</h2>
      <${ArtifactPreview} api=${api} entity=${graph.entities.find((entity) => entity.sha256 === lineage.artifact.sha256)!} />
    </section>
    <section class="panel" aria-labelledby="lineage-title">
      <h2 id="lineage-title">Lineage</h2>
      <p class="muted small">Runs (boxes) and artifacts (rounded) left to right in time: a dashed arrow is <em>used</em> (an input or${' '}
        the code, into a run), a solid one <em>was generated by</em> (out of a run). Click a run for its provenance record, an${' '}
        artifact to open it.${lineage.truncated ? ` The walk stopped at ${MOST_ACTIVITIES} runs each way: there is more than shown.` : ''}
        </p>
      <${DagGraph} id="lineage-graph" title=${`Lineage of artifact ${sha256}`} description=${description} nodes=${nodes} edges=${edges}
        onSelect=${select} />
      <${LineageTable} graph=${graph} current=${sha256} selected=${selectedRun} onSelect=${setSelectedRun} />
    </section>
    ${selectedRun ? html`<${SelectedRun} api=${api} activity=${byId.get(selectedRun)} runId=${selectedRun} />` : null}
  `
}

/** The graph as a table, for screen readers and the keyboard: each run with what it used and what it generated. */
function LineageTable({
  graph,
  current,
  selected,
  onSelect,
}: {
  graph: Merged
  current: string
  selected?: string
  onSelect: (id: string) => void
}) {
  const entities = new Map(graph.entities.map((entity) => [entity.sha256, entity]))
  const linked = (activity: string, relation: LineageRelation['relation']) =>
    graph.relations
      .filter((item) => item.activity === activity && item.relation === relation)
      .map((item) => {
        const entity = entities.get(item.entity)
        return html`<li>${
          item.entity === current
            ? html`<strong>this artifact</strong>`
            : html`<${ArtifactLink}
          artifact=${{
            sha256: item.entity,
            size: entity?.size ?? 0,
            path: entity ? entityName(entity) : undefined,
            mediaType: entity?.mediaType,
          }} />`
        } <span class="muted small">(${item.role})</span></li>`
      })
  return html`
    <div class="table-scroll">
      <table class="data" data-testid="lineage-table">
        <caption class="visually-hidden">The runs in this artifact's lineage, with what each used and generated</caption>
        <thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Adapter</th><th scope="col">Started</th>
          <th scope="col">Used</th><th scope="col">Generated</th></tr></thead>
        <tbody>
          ${graph.activities.map(
            (activity) => html`<tr data-activity=${activity.id}>
            <th scope="row">${
              activity.kind === 'run'
                ? html`<button type="button" class="link" aria-pressed=${activity.id === selected ? 'true' : 'false'}
                  onClick=${() => onSelect(activity.id)} title=${activity.id}>${activityName(activity)}</button>`
                : html`<a href=${href(activityPage(activity))}>${activityName(activity)}</a>`
            }</th>
            <td>${activity.status ? html`<${Badge} value=${activity.status} />` : html`<span class="muted">—</span>`}</td>
            <td>${activity.adapter ?? '—'}</td>
            <td>${activity.startedAt ? html`<time datetime=${activity.startedAt}>${formatTime(activity.startedAt)}</time>` : '—'}</td>
            <td><ul class="plain-list">${linked(activity.id, 'used')}</ul></td>
            <td><ul class="plain-list">${linked(activity.id, 'wasGeneratedBy')}</ul></td>
          </tr>`,
          )}
        </tbody>
      </table>
    </div>
  `
}

function SelectedRun({ api, activity, runId }: { api: PageProps['api']; activity?: LineageActivity; runId: string }) {
  return html`
    <section class="panel" id="selected-run" aria-labelledby="selected-run-title" data-testid="selected-run" tabindex="-1">
      <h2 id="selected-run-title">Provenance of ${activity ? activityName(activity) : 'the run'} <a class="small"
        href=${href(`runs/${runId}`)}>open the run's page</a></h2>
      <${RunRecordLoader} api=${api} runId=${runId} />
    </section>
  `
}
