import { RunRecordLoader } from '../components/run-record'
import { html } from '../html'
import type { PageProps } from '../pages'
import { href } from '../router'

/** One run's provenance (GET /v1/runs/:id/record), with its PROV-JSON export. */
export function RunRecordPage({ api, params }: PageProps) {
  const runId = params.id!
  return html`
    <p><a href=${href('artifacts')}>← Artifacts</a></p>
    <h1 id="page-title" tabindex="-1">Run <code>${runId}</code></h1>
    <p class="lede">The run's provenance record in the artifact ledger: what ran it, under which policy, when, and the artifacts it used and generated. Export gives the same as W3C PROV-JSON.</p>
    <section class="panel" aria-label="Provenance record"><${RunRecordLoader} api=${api} runId=${runId} /></section>
  `
}
