import { useState } from 'preact/hooks'
import { EXECUTION_STATUSES } from '../../../src/core/types'
import type { ActivitySummary } from '../api-types'
import { LineChart, StackedBars, type LineSeries } from '../components/charts'
import { Badge, ErrorMessage, Loading } from '../components/feedback'
import { formatMs, formatTime } from '../format'
import { usePolling } from '../hooks'
import { html } from '../html'
import type { PageProps } from '../pages'

const REFRESH_MS = 2000
const WINDOWS = [
  { label: 'Last 5 minutes', windowSeconds: 300, bucketSeconds: 5 },
  { label: 'Last 15 minutes', windowSeconds: 900, bucketSeconds: 15 },
  { label: 'Last hour', windowSeconds: 3600, bucketSeconds: 60 },
]

/** Activity: the caller's runs over time (rate, statuses, p50/p95 latency per adapter and lane), from GET /v1/activity. */
export function ActivityPage({ api }: PageProps) {
  const [choice, setChoice] = useState(0)
  const range = WINDOWS[choice]!
  const live = usePolling(
    (signal) =>
      api.get<ActivitySummary>(`/v1/activity?windowSeconds=${range.windowSeconds}&bucketSeconds=${range.bucketSeconds}`, { signal }),
    REFRESH_MS,
    [api, choice],
  )
  const summary = live.data
  return html`
    <h1 id="page-title" tabindex="-1">Activity</h1>
    <p class="lede">Runs that finished ${
      summary?.scope === 'deployment'
        ? `on every node of this deployment (${
            summary.nodes?.length ?? 0
          } with runs in the window), from its record of recent runs in Redis`
        : 'on this server, from its in-memory record of recent runs'
    }
      ${summary ? ` (the last ${summary.capacity.toLocaleString()})` : ''}: yours only, whoever started them (HTTP, MCP, tasks).${' '}
      Updates every ${REFRESH_MS / 1000} s.</p>
    <div class="field inline">
      <label for="activity-window">Window</label>
      <select id="activity-window" value=${String(choice)}
        onChange=${(event: Event) => setChoice(Number((event.currentTarget as HTMLSelectElement).value))}>
        ${WINDOWS.map((item, index) => html`<option value=${String(index)}>${item.label}</option>`)}
      </select>
    </div>
    <${ErrorMessage} error=${live.error} context="Could not refresh" />
    ${summary ? html`<${Charts} summary=${summary} />` : live.error ? null : html`<${Loading} what="activity" />`}
  `
}

function Charts({ summary }: { summary: ActivitySummary }) {
  const xDomain: [number, number] = [summary.fromMs, summary.fromMs + summary.buckets.length * summary.bucketMs]
  const seconds = summary.bucketMs / 1000
  // The last bucket is still filling: its rate is over the part that has passed.
  const rate = summary.buckets.map((bucket) => ({
    x: bucket.startMs,
    y: bucket.count / Math.max(0.5, Math.min(seconds, (summary.nowMs - bucket.startMs) / 1000)),
  }))
  const statuses = EXECUTION_STATUSES.filter((status) => summary.statuses[status])
  const latency: LineSeries[] = summary.series.flatMap((series, index) => [
    {
      name: `${series.adapter} · ${series.lane} p50`,
      colour: index,
      points: series.points.map((point) => ({ x: point.startMs, y: point.p50Ms })),
    },
    {
      name: `${series.adapter} · ${series.lane} p95`,
      colour: index,
      dashed: true,
      points: series.points.map((point) => ({ x: point.startMs, y: point.p95Ms })),
    },
  ])
  const ok = summary.statuses.ok ?? 0
  return html`
    <dl class="facts summary">
      <div><dt>Runs</dt><dd data-testid="activity-total">${summary.total}</dd></div>
      <div><dt>Average rate</dt><dd>${(summary.total / ((summary.nowMs - summary.fromMs) / 1000)).toFixed(2)} runs/s</dd></div>
      <div><dt>Ended ok</dt><dd>${summary.total ? `${Math.round((100 * ok) / summary.total)} %` : '—'}</dd></div>
    </dl>
    ${
      summary.knownSinceMs
        ? html`<p class="notice"
      role="note">The record holds the last ${summary.capacity} runs of every tenant: nothing before${' '}
      ${formatTime(summary.knownSinceMs)} is known (server.activityCapacity).</p>`
        : null
    }
    <div class="chart-grid">
      <section class="panel" aria-labelledby="rate-title">
        <h2 id="rate-title">Rate</h2>
        <${LineChart} id="chart-rate" title="Runs per second"
          description=${`Runs finished per second in ${seconds}-second buckets; ${summary.total} runs in the window.`}
          series=${[{ name: 'runs/s', colour: 0, points: rate }]} xDomain=${xDomain} step=${summary.bucketMs}
          formatY=${(value: number) => `${Number(value.toFixed(2))}/s`} />
      </section>
      <section class="panel" aria-labelledby="statuses-title">
        <h2 id="statuses-title">Statuses</h2>
        <${StackedBars} id="chart-statuses" title="Runs by status"
          description=${statuses.map((status) => `${status}: ${summary.statuses[status]}`).join(', ') || 'no runs'} xDomain=${xDomain}
          bucketMs=${summary.bucketMs}
          buckets=${summary.buckets.map((bucket) => ({
            x: bucket.startMs,
            parts: EXECUTION_STATUSES.map((status) => ({ key: status, value: bucket.statuses[status] ?? 0 })),
          }))} />
        <ul class="legend" aria-label="Statuses in the window">
          ${statuses.map(
            (status) => html`<li><span class=${`swatch fill-${status}`} aria-hidden="true"></span>
            <${Badge} value=${status} /> ${summary.statuses[status]}</li>`,
          )}
        </ul>
      </section>
    </div>
    <section class="panel" aria-labelledby="latency-title">
      <h2 id="latency-title">Latency by adapter and lane</h2>
      <${LineChart} id="chart-latency" title="p50 and p95 latency"
        description=${
          summary.series
            .map((series) => `${series.adapter} ${series.lane}: p50 ${formatMs(series.p50Ms)}, p95 ${formatMs(series.p95Ms)}`)
            .join('; ') || 'no runs'
        }
        series=${latency} xDomain=${xDomain} step=${summary.bucketMs} scale="log" formatY=${formatMs} height=${240} />
      <p class="muted small">Solid: p50; dashed: p95, per ${seconds}-second bucket, on a logarithmic scale. Lane <code>none</code>:${' '}
        refused before admission (a bad request, a policy violation).</p>
      <div class="table-scroll">
        <table class="data" data-testid="latency-table">
          <caption class="visually-hidden">Latency over the window by adapter and lane</caption>
          <thead><tr><th scope="col">Adapter</th><th scope="col">Lane</th><th scope="col">Runs</th><th scope="col">p50</th>
            <th scope="col">p95</th></tr></thead>
          <tbody>
            ${summary.series.length === 0 ? html`<tr><td colspan="5">No runs in this window yet.</td></tr>` : null}
            ${summary.series.map(
              (series, index) => html`<tr>
              <th scope="row"><span class=${`swatch series-${index % 8}`} aria-hidden="true"></span>${series.adapter}</th>
              <td>${series.lane}</td><td>${series.count}</td><td>${formatMs(series.p50Ms)}</td><td>${formatMs(series.p95Ms)}</td>
            </tr>`,
            )}
          </tbody>
        </table>
      </div>
    </section>
  `
}
