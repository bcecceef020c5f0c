import type { ExecutionResult } from '../api-types'
import { formatJson, formatMs } from '../format'
import { html } from '../html'
import { href } from '../router'
import { EgressTable } from './egress-table'
import { Badge } from './feedback'
import { OutputsView } from './output-view'

/** One ExecutionResult: status, value, duration, route, fallback, message and error, with nothing left out silently. */
export function ResultView({ result, showOutput = false }: { result: ExecutionResult; showOutput?: boolean }) {
  const rows: [string, unknown][] = [
    ['Duration', formatMs(result.durationMs)],
    ['Adapter', result.adapter],
    [
      'Route',
      result.route
        ? [
            result.route.reason,
            result.route.escalatedFrom && `escalated from ${result.route.escalatedFrom}`,
            result.route.rerunFrom && `run again after ${result.route.rerunFrom}`,
          ]
            .filter(Boolean)
            .join('; ')
        : undefined,
    ],
    ['Fallback', result.fallbackFrom ? `from ${result.fallbackFrom.adapter}: ${result.fallbackFrom.reason}` : undefined],
    [
      'Admission',
      result.admission
        ? `${result.admission.lane} lane, priority ${result.admission.priority}, waited ${formatMs(result.admission.queuedMs)}`
        : undefined,
    ],
    [
      'Output',
      `${result.stdoutBytes} bytes stdout, ${result.stderrBytes} bytes stderr${result.truncated ? ' (truncated: head and tail kept)' : ''}`,
    ],
    ['Trace id', result.traceId],
  ]
  return html`
    <div class="result" data-status=${result.status}>
      <p class="result-status">Status <${Badge} value=${result.status} /></p>
      ${result.message ? html`<p class="result-message">${result.message}</p>` : null}
      ${
        result.error
          ? html`<p class="result-error"><strong>${result.error.type}</strong>
        ${result.error.line ? ` (line ${result.error.line})` : ''}: ${result.error.message}</p>`
          : null
      }
      ${
        'value' in result && result.value !== undefined
          ? html`<div class="result-value"><h3>Value</h3><pre>
        ${formatJson(result.value)}</pre></div>`
          : null
      }
      <${OutputsView} outputs=${result.outputs} />
      <${EgressTable} records=${result.egress} />
      <dl class="facts">
        ${
          result.runId
            ? html`<div><dt>Run</dt><dd>
          <a href=${href(`runs/${result.runId}`)} data-testid="run-link"
          aria-label=${`Provenance of run ${result.runId}`}><code>${result.runId}</code></a></dd></div>`
            : null
        }
        ${rows
          .filter(([, value]) => value !== undefined && value !== '')
          .map(
            ([name, value]) => html`<div><dt>${name}</dt><dd>
          ${String(value)}</dd></div>`,
          )}
      </dl>
      ${
        showOutput && (result.stdout || result.stderr)
          ? html`<h3>Output</h3><pre class="output">${result.stdout ? html`<span class="stdout">${result.stdout}</span>` : null}
            ${result.stderr ? html`<span class="stderr">${result.stderr}</span>` : null}</pre>`
          : null
      }
    </div>
  `
}
