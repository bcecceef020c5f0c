import { ErrorMessage, Loading } from '../components/feedback'
import { ReceiptPanel } from '../components/receipt-view'
import { RunRecordView, useRunRecord } from '../components/run-record'
import { html } from '../html'
import type { PageProps } from '../pages'
import { href } from '../router'

/**
 * One run's provenance (GET /v1/runs/:id/record), with its PROV-JSON export, egress log and signed receipt. The
 * receipt is asked for only once the record is there: a run the tenant cannot see has one refusal, not two.
 */
export function RunRecordPage({ api, params }: PageProps) {
  const runId = params.id!
  const { answer, error } = useRunRecord(api, runId)
  return html`
    <p><a href=${href('artifacts')}>← Artifacts</a></p>
    <h1 id="page-title" tabindex="-1">Run <code>${runId}</code></h1>
    <p class="lede">The run's provenance record in the artifact ledger: what ran it, under which policy, when, and the artifacts it${' '}
      used and generated. Export gives the same as W3C PROV-JSON.</p>
    <section class="panel" aria-label="Provenance record">
      ${
        error
          ? html`<${ErrorMessage} error=${error} />`
          : answer
            ? html`<${RunRecordView} api=${api} answer=${answer}
      />`
            : html`<${Loading} what="the run's record" />`
      }</section>
    ${
      answer
        ? html`<section class="panel" aria-labelledby="receipt-title"><h2 id="receipt-title">Signed receipt</h2>
      <p class="lede">The record as an in-toto Statement signed by this server (Ed25519, DSSE), checked here against the server's${' '}
      public key.</p><${ReceiptPanel} api=${api} runId=${runId} /></section>`
        : null
    }
  `
}
