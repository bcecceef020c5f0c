import { useEffect, useState } from 'preact/hooks'
import { ApiError, type ApiClient } from '../api'
import type { ArtifactRef, RunRecordAnswer } from '../api-types-fabric'
import { formatBytes, formatDateTime, formatMs, shortId } from '../format'
import { html } from '../html'
import { href } from '../router'
import { saveBlob } from './download'
import { EgressTable } from './egress-table'
import { Badge, ErrorMessage, Loading } from './feedback'
import { FactList } from './fact-list'

/** GET /v1/runs/:id/record, loaded when the run id changes. */
export function useRunRecord(api: ApiClient, runId: string | undefined): { answer?: RunRecordAnswer; error?: unknown } {
  const [state, setState] = useState<{ answer?: RunRecordAnswer; error?: unknown }>({})
  useEffect(() => {
    setState({})
    if (!runId) return
    let current = true
    api.get<RunRecordAnswer>(`/v1/runs/${encodeURIComponent(runId)}/record`).then(
      (answer) => current && setState({ answer }),
      (error) => current && setState({ error }),
    )
    return () => void (current = false)
  }, [api, runId])
  return state
}

/** A link to an artifact's page, named by its path (or role) with its size and media type. */
export function ArtifactLink({ artifact }: { artifact: Pick<ArtifactRef, 'sha256' | 'size'> & { path?: string; mediaType?: string } }) {
  return html`<a href=${href(`artifacts/${artifact.sha256}`)} class="artifact-link"
    data-sha256=${artifact.sha256}><code>${artifact.path ?? shortId(artifact.sha256, 12)}</code></a> <span class="muted small">
    ${[artifact.mediaType, formatBytes(artifact.size)].filter(Boolean).join(', ')}</span>`
}

/** The run's PROV-JSON document (GET /v1/runs/:id/provenance), saved as a file. */
export function ExportProvButton({ api, runId }: { api: ApiClient; runId: string }) {
  const [error, setError] = useState<unknown>()
  const [busy, setBusy] = useState(false)
  const save = async () => {
    setBusy(true)
    setError(undefined)
    try {
      saveBlob(await api.bytes(`/v1/runs/${encodeURIComponent(runId)}/provenance`), `run-${runId}.prov.json`)
    } catch (failure) {
      setError(failure)
    } finally {
      setBusy(false)
    }
  }
  return html`<button type="button" onClick=${save} disabled=${busy}>${busy ? 'Exporting…' : 'Export PROV-JSON'}</button>
    <${ErrorMessage} error=${error} context="Export failed" />`
}

function ArtifactList({ items, empty }: { items: (ArtifactRef | undefined)[]; empty: string }) {
  const present = items.filter((item): item is ArtifactRef => !!item)
  if (present.length === 0) return html`<p class="muted">${empty}</p>`
  return html`<ul class="artifact-list">${present.map((item) => html`<li><${ArtifactLink} artifact=${item} /></li>`)}</ul>`
}

/** A run's provenance record: what ran, where, under which policy, when, and the artifacts it used and produced. */
export function RunRecordView({ api, answer }: { api: ApiClient; answer: RunRecordAnswer }) {
  const record = answer.record
  const stream = (name: 'stdout' | 'stderr') => {
    const digest = record[name]
    return digest.stored ? { path: name, sha256: digest.sha256, size: digest.size, mediaType: 'text/plain' } : undefined
  }
  const facts: [string, unknown][] = [
    ['Adapter', `${record.adapter}${record.tier !== undefined ? ` (tier ${record.tier})` : ''}`],
    ['Language', record.language],
    ['Started', formatDateTime(record.startedAt)],
    ['Ended', formatDateTime(record.endedAt)],
    ['Wall time', formatMs(record.wallMs)],
    ['CPU time', record.cpuMs !== undefined ? formatMs(record.cpuMs) : undefined],
    ['Peak memory', record.peakMemoryBytes !== undefined ? formatBytes(record.peakMemoryBytes) : undefined],
    ['Lane', record.lane],
    ['Error', record.error ? `${record.error.type}${record.error.code ? ` (${record.error.code})` : ''}` : undefined],
    ['Fallback', record.fallbackFrom ? `from ${record.fallbackFrom.adapter}: ${record.fallbackFrom.reason}` : undefined],
    ['Trace id', record.traceId],
    ['execgate', record.execgateVersion],
  ]
  return html`
    <div class="run-record" data-run=${record.runId}>
      <p>Status <${Badge} value=${record.status}
        /> ${
          record.taskId
            ? html` · task <a href=${href(`tasks/${record.taskId}`)}><code>${record.taskId}</code></a>
        ${record.attempt ? `, attempt ${record.attempt}` : ''}`
            : null
        }
        ${
          record.planId
            ? html` · plan <a href=${href(`plans/${record.planId}`)}><code>${shortId(record.planId)}</code>
          </a> version ${record.planVersion}, step <code>${record.stepId}</code>`
            : null
        }</p>
      <${FactList} facts=${facts} />
      <dl class="facts digests">
        <div><dt>Code digest (SHA-256)</dt><dd><a href=${href(`artifacts/${record.code.sha256}`)}
          data-testid="code-digest"><code>${record.code.sha256}</code></a></dd></div>
        <div><dt>Policy digest (SHA-256)</dt><dd>
          <code data-testid="policy-digest">${record.policySha256 ?? 'none: refused before its policy was resolved'}</code></dd></div>
        <div><dt>Place in the tenant's chain</dt>
          <dd>record ${answer.seq}, hash <code title=${answer.hash}>${shortId(answer.hash, 16)}</code></dd></div>
      </dl>
      ${
        record.limits
          ? html`<p class="small"><span class="muted">Limits:</span> ${Object.entries(record.limits)
              .map(([name, value]) => `${name} ${typeof value === 'object' ? JSON.stringify(value) : String(value)}`)
              .join(' · ')}</p>`
          : null
      }
      <div class="record-columns">
        <div><h3>Used</h3><${ArtifactList} items=${[
          record.code,
          ...record.inputs,
          record.planDocument && { ...record.planDocument, path: 'plan document' },
        ]} empty="Nothing." /></div>
        <div><h3>Generated</h3><${ArtifactList} items=${[
          ...record.outputs,
          record.value && { path: 'value', sha256: record.value.sha256, size: record.value.size, mediaType: 'application/json' },
          stream('stdout'),
          stream('stderr'),
        ]}
          empty="No file, value or stored stream." /></div>
      </div>
      <${EgressTable} records=${record.egress} />
      <div class="actions"><${ExportProvButton} api=${api} runId=${record.runId} /></div>
    </div>
  `
}

/** A run's record on its own: for the run page and for a run picked in a lineage graph. */
export function RunRecordLoader({ api, runId }: { api: ApiClient; runId: string }) {
  const { answer, error } = useRunRecord(api, runId)
  if (error) return html`<${ErrorMessage} error=${error} />`
  return answer ? html`<${RunRecordView} api=${api} answer=${answer} />` : html`<${Loading} what="the run's record" />`
}

/**
 * Under a run's result: the artifacts it produced (its files and its value), each a link to the artifact's page, and
 * the link to its provenance. Read from the run's record (GET /v1/runs/:id/record), which the ledger has as soon as
 * the result is out.
 */
export function ProducedArtifacts({ api, runId }: { api: ApiClient; runId: string }) {
  const { answer, error } = useRunRecord(api, runId)
  if (error instanceof ApiError && error.code === 'EXECGATE_LEDGER_DISABLED')
    return html`<p class="muted">The artifact ledger is off on this server (fabric.ledger.enabled): runs are not recorded.</p>`
  if (error) return html`<${ErrorMessage} error=${error} context="The ledger has no record of this run" />`
  if (!answer) return html`<${Loading} what="what the run produced" />`
  const { outputs, value } = answer.record
  return html`
    <div class="produced" data-testid="produced-artifacts">
      <h3>Produced</h3>
      <${ArtifactList} items=${[
        ...outputs,
        value && { path: 'value', sha256: value.sha256, size: value.size, mediaType: 'application/json' },
      ]} empty="No file and no value." />
      <p><a href=${href(`runs/${runId}`)}>Provenance of this run</a> (code, policy, inputs, times; PROV-JSON export)</p>
    </div>
  `
}
