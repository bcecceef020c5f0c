import { useEffect, useState } from 'preact/hooks'
import type { ApiClient } from '../api'
import type { EgressRecord } from '../api-types'
import { formatJson, shortId } from '../format'
import { html } from '../html'
import { checkReceipt, type ReceiptCheck, type ReceiptEnvelope } from '../receipt-check'
import { saveBlob } from './download'
import { EgressTable } from './egress-table'
import { Badge, ErrorMessage, Loading } from './feedback'

interface PublicKeyAnswer {
  algorithm: 'ed25519'
  keyid: string
  publicKeyPem: string
}

/** What a check found, in words: verified with which key and payload digest, or why not. */
function CheckOutcome({ check, testId }: { check: ReceiptCheck; testId: string }) {
  return html`<p class="receipt-check" data-testid=${testId} data-ok=${String(check.ok)}>
    <${Badge} value=${check.ok ? 'verified' : 'not verified'} />
    ${
      check.ok
        ? ` signed by the server's key ${shortId(check.keyid, 16)}; payload SHA-256 ${shortId(check.payloadSha256, 16)}`
        : ` ${check.reason}`
    }
  </p>`
}

/** The verified statement: its subjects (what the run produced, by digest), the run's facts and its egress log. */
function StatementView({ check }: { check: ReceiptCheck & { ok: true } }) {
  const { statement } = check
  const predicate = statement.predicate
  const policy = predicate.policy as { sha256?: string } | undefined
  const facts: [string, unknown][] = [
    ['Predicate', statement.predicateType],
    ['Status', predicate.status],
    ['Adapter', predicate.tier !== undefined ? `${String(predicate.adapter)} (tier ${String(predicate.tier)})` : predicate.adapter],
    ['Code SHA-256', (predicate.code as { sha256?: string } | undefined)?.sha256],
    ['Policy SHA-256', policy?.sha256],
    ['Started', predicate.startedAt],
    ['Ended', predicate.endedAt],
  ]
  return html`
    <dl class="facts">${facts
      .filter(([, value]) => value !== undefined)
      .map(
        ([name, value]) => html`<div><dt>${name}</dt><dd>
      <code>${String(value)}</code></dd></div>`,
      )}</dl>
    <h4>Subjects</h4>
    <ul class="receipt-subjects" data-testid="receipt-subjects">
      ${statement.subject.map(
        (item) => html`<li>
      <code>${item.name}</code> <span class="muted small"
      title=${item.digest.sha256}>sha256 ${shortId(item.digest.sha256, 16)}</span></li>`,
      )}</ul>
    <${EgressTable} records=${predicate.egress as EgressRecord[] | undefined} caption="Signed egress log" />
    <details><summary>The signed statement (JSON)</summary><pre class="output">${formatJson(statement)}</pre></details>
  `
}

/**
 * A run's signed receipt (GET /v1/runs/:id/receipt, docs/ledger.md#signed-receipts): checked here against the
 * server's public key (GET /v1/ledger/public-key), shown, and offered for download with the key, for
 * `execgate ledger verify-receipt`. A receipt file someone sends back can be checked against the same key.
 */
export function ReceiptPanel({ api, runId }: { api: ApiClient; runId: string }) {
  const [state, setState] = useState<{ envelope?: ReceiptEnvelope; key?: PublicKeyAnswer; check?: ReceiptCheck; error?: unknown }>({})
  const [fileCheck, setFileCheck] = useState<{ name: string; check: ReceiptCheck }>()
  useEffect(() => {
    setState({})
    let current = true
    Promise.all([
      api.get<ReceiptEnvelope>(`/v1/runs/${encodeURIComponent(runId)}/receipt`),
      api.get<PublicKeyAnswer>('/v1/ledger/public-key'),
    ]).then(
      async ([envelope, key]) => {
        const check = await checkReceipt(envelope, key.publicKeyPem)
        if (current) setState({ envelope, key, check })
      },
      (error) => current && setState({ error }),
    )
    return () => void (current = false)
  }, [api, runId])

  const { envelope, key, check, error } = state
  if (error) return html`<${ErrorMessage} error=${error} context="No receipt" />`
  if (!envelope || !key || !check) return html`<${Loading} what="the signed receipt" />`

  const checkFile = async (event: Event) => {
    const file = (event.currentTarget as HTMLInputElement).files?.[0]
    if (!file) return
    let parsed: unknown
    try {
      parsed = JSON.parse(await file.text())
    } catch {
      setFileCheck({ name: file.name, check: { ok: false, reason: 'the file is not JSON' } })
      return
    }
    setFileCheck({ name: file.name, check: await checkReceipt(parsed, key.publicKeyPem) })
  }
  return html`
    <div class="receipt" data-testid="receipt">
      <${CheckOutcome} check=${check} testId="receipt-check" />
      ${check.ok ? html`<${StatementView} check=${check} />` : null}
      <div class="actions">
        <button type="button" onClick=${() =>
          saveBlob(
            new Blob([JSON.stringify(envelope, null, 2)], { type: 'application/json' }),
            `receipt-${runId}.json`,
          )}>Download receipt</button>
        <button type="button" onClick=${() =>
          saveBlob(
            new Blob([key.publicKeyPem], { type: 'application/x-pem-file' }),
            'execgate-public-key.pem',
          )}>Download public key</button>
      </div>
      <p class="small muted">Offline: <code>execgate ledger verify-receipt receipt-${runId}.json --key execgate-public-key.pem</code></p>
      <div class="field">
        <label for="receipt-file">Check a receipt file against this server's key</label>
        <input id="receipt-file" type="file" accept="application/json,.json" onChange=${checkFile} />
      </div>
      ${
        fileCheck
          ? html`<p class="small">${fileCheck.name}:</p>
        <${CheckOutcome} check=${fileCheck.check} testId="receipt-file-check" />`
          : null
      }
    </div>
  `
}
