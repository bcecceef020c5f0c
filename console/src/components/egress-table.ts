import type { EgressRecord } from '../api-types'
import { formatBytes, formatMs } from '../format'
import { html } from '../html'
import { Badge } from './feedback'

/**
 * A run's requests through the egress gateway (`result.egress`, the ledger record's `egress`, a receipt's predicate):
 * one row each, refused attempts too, with the rule that allowed it or the reason it was refused (docs/network.md).
 */
export function EgressTable({ records, caption }: { records: readonly EgressRecord[] | undefined; caption?: string }) {
  if (!records?.length) return null
  const denied = records.filter((record) => record.decision === 'denied').length
  return html`
    <div class="egress table-scroll" data-testid="egress-records">
      <table class="data">
        <caption>${caption ?? 'Network'}: ${records.length} ${records.length === 1 ? 'request' : 'requests'} through the egress${' '}
          gateway${denied ? `, ${denied} refused` : ''}</caption>
        <thead><tr><th scope="col">Decision</th><th scope="col">Request</th><th scope="col">Status</th><th scope="col">Out / in</th>
          <th scope="col">Time</th><th scope="col">Rule or reason</th></tr></thead>
        <tbody>
          ${records.map(
            (record) => html`<tr data-decision=${record.decision}>
              <td><${Badge} value=${record.decision} /></td>
              <td><code>${record.method} ${record.url ?? `${record.host}:${record.port}`}</code></td>
              <td>${record.status ?? '—'}</td>
              <td>${formatBytes(record.bytesOut)} / ${formatBytes(record.bytesIn)}</td>
              <td>${formatMs(record.durationMs)}</td>
              <td>${record.rule ? html`<code>${record.rule}</code>` : null}${record.rule && record.reason ? ' — ' : ''}
                ${record.reason ?? ''}</td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>
  `
}
