import { useEffect, useState } from 'preact/hooks'
import { TIER_NAMES } from '../../../src/core/types'
import type { ExecgateStatus, FabricNode, PolicyExplanation, ReadinessEvent } from '../api-types'
import { Badge, ErrorMessage, Loading } from '../components/feedback'
import { formatAgo, formatMs, formatTime } from '../format'
import { usePolling } from '../hooks'
import { html } from '../html'
import type { PageProps } from '../pages'

/** How often the page asks for health and the timeline: a switch shows within this. */
const REFRESH_MS = 2000

/** Adapters: health, breaker, slots and queues per lane; the enforcement table; the readiness timeline. */
export function AdaptersPage({ api }: PageProps) {
  const live = usePolling(
    async (signal) => {
      const [status, history] = await Promise.all([
        api.get<ExecgateStatus>('/v1/adapters', { signal }),
        api.get<{ capacity: number; events: ReadinessEvent[] }>('/v1/readiness/events', { signal }),
      ])
      return { status, history }
    },
    REFRESH_MS,
    [api],
  )
  const names = live.data?.status.adapters.map((adapter) => adapter.name).join(',') ?? ''
  const [policies, setPolicies] = useState<PolicyExplanation[]>()
  const [policyError, setPolicyError] = useState<unknown>()
  useEffect(() => {
    if (!names) return
    // Enforcement depends on the adapters and the policy, not on health: asked once per set of adapters.
    Promise.all(names.split(',').map((name) => api.get<PolicyExplanation>(`/v1/adapters/${encodeURIComponent(name)}/policy`))).then(
      setPolicies,
      setPolicyError,
    )
  }, [api, names])

  const status = live.data?.status
  return html`
    <h1 id="page-title" tabindex="-1">Adapters</h1>
    <p class="lede">Health as the readiness monitor last saw it, circuit breakers, and admission's slots and queues per lane. Updates${' '}
      every ${REFRESH_MS / 1000} s.</p>
    <${ErrorMessage} error=${live.error} context="Could not refresh" />
    ${
      !status
        ? live.error
          ? null
          : html`<${Loading} what="adapters" />`
        : html`
          <dl class="facts summary">
            <div><dt>Active adapter</dt><dd data-testid="active-adapter">
              ${status.active === 'auto' ? 'auto (cheapest available)' : status.active}</dd></div>
            <div><dt>Last switch</dt><dd>${
              status.lastSwitch
                ? `${formatTime(status.lastSwitch.at)}: ${
                    status.lastSwitch.from ?? 'auto'
                  } → ${status.lastSwitch.to ?? 'auto'} (${status.lastSwitch.reason})`
                : 'none since start'
            }</dd></div>
            <div><dt>Warm-up</dt><dd>${status.warmedUp ? 'done' : 'in progress'}</dd></div>
            <div><dt>In-process batch runs</dt>
              <dd>${status.admission.inProcessBatch.inUse} of ${status.admission.inProcessBatch.limit}</dd></div>
          </dl>
          <section class="panel" aria-labelledby="health-title">
            <h2 id="health-title">Health and capacity</h2>
            <${AdapterTable} status=${status} />
          </section>
          ${
            status.nodes && status.nodes.length
              ? html`<section class="panel" aria-labelledby="nodes-title">
            <h2 id="nodes-title">Nodes</h2>
            <${NodeTable} status=${status} />
          </section>`
              : null
          }
        `
    }
    <section class="panel" aria-labelledby="enforcement-title">
      <h2 id="enforcement-title">Enforcement</h2>
      <${ErrorMessage} error=${policyError} />
      ${policies ? html`<${EnforcementTable} policies=${policies} />` : policyError ? null : html`<${Loading} what="enforcement" />`}
    </section>
    <section class="panel" aria-labelledby="timeline-title">
      <h2 id="timeline-title">Readiness timeline</h2>
      ${live.data ? html`<${Timeline} events=${live.data.history.events} capacity=${live.data.history.capacity} />` : null}
    </section>
  `
}

function lanes(values: { interactive: number; batch: number }): string {
  return `interactive ${values.interactive}, batch ${values.batch}`
}

function AdapterTable({ status }: { status: ExecgateStatus }) {
  const admission = new Map(status.admission.adapters.map((item) => [item.adapter, item]))
  return html`
    <div class="table-scroll">
      <table class="data" data-testid="adapter-table">
        <caption class="visually-hidden">Adapters, their health and capacity</caption>
        <thead><tr><th scope="col">Adapter</th><th scope="col">Tier</th><th scope="col">Languages</th><th scope="col">Health</th>
          <th scope="col">Breaker</th><th scope="col">Slots in use</th><th scope="col">Queued</th></tr></thead>
        <tbody>
          ${status.adapters.map((adapter) => {
            const slots = admission.get(adapter.name)
            return html`<tr data-adapter=${adapter.name}>
              <th scope="row">${adapter.name}${
                adapter.warm === undefined
                  ? null
                  : html` <span class="muted">
                ${adapter.warm ? 'warm' : 'cold'}</span>`
              }</th>
              <td>${adapter.tier} <span class="muted">${TIER_NAMES[adapter.tier]}</span></td>
              <td>${adapter.languages.join(', ')}</td>
              <td class="health" data-state=${adapter.health.state}>
                <${Badge} value=${adapter.health.state} />
                ${adapter.health.reason ? html`<div class="reason">${adapter.health.reason}</div>` : null}
                <div class="muted small">${
                  adapter.health.checkedAt
                    ? `checked ${formatTime(adapter.health.checkedAt)}${
                        adapter.health.latencyMs !== undefined ? `, ${formatMs(adapter.health.latencyMs)}` : ''
                      }`
                    : 'not checked yet'
                }</div>
              </td>
              <td><${Badge} value=${adapter.breaker} /></td>
              <td>${
                slots
                  ? html`${lanes(slots.inUse)}<div class="muted small">
                ${slots.slots === null ? 'unbounded' : `${slots.slots} slots, ${slots.reserved} kept for interactive`}</div>`
                  : '—'
              }</td>
              <td>${slots ? lanes(slots.queued) : '—'}</td>
            </tr>`
          })}
        </tbody>
      </table>
    </div>
  `
}

function EnforcementTable({ policies }: { policies: PolicyExplanation[] }) {
  const first = policies[0]
  if (!first) return html`<p>No adapter is enabled.</p>`
  return html`
    <p class="muted">How each adapter holds each limit of ${
      first.profile ? html`the policy profile <code>${first.profile}</code>` : 'the default policy (security.defaultPolicy)'
    }: <strong>hard</strong> (the backend stops it), <strong>soft</strong>${' '}
      (checked after the fact) or <strong>none</strong>. A required limit an adapter cannot hold keeps routing away from it.</p>
    <div class="table-scroll">
      <table class="data enforcement" data-testid="enforcement-table">
        <caption class="visually-hidden">Enforcement of each policy limit by each adapter</caption>
        <thead><tr><th scope="col">Limit</th><th scope="col">Setting</th>
          ${policies.map(
            (policy) => html`<th scope="col">${policy.adapter}
          ${policy.usable ? null : html` <span class="muted">(not usable)</span>`}</th>`,
          )}</tr></thead>
        <tbody>
          ${first.rows.map(
            (row, index) => html`<tr>
            <th scope="row">${row.limit}${row.required ? html` <span class="muted">(required)</span>` : null}</th>
            <td>${row.setting}</td>
            ${policies.map((policy) => {
              const cell = policy.rows[index]!
              return html`<td data-adapter=${policy.adapter}><${Badge} value=${cell.enforcement} />
                ${cell.satisfied ? null : html` <span class="reason">not enforced, required</span>`}</td>`
            })}
          </tr>`,
          )}
        </tbody>
      </table>
    </div>
  `
}

function Timeline({ events, capacity }: { events: ReadinessEvent[]; capacity: number }) {
  if (events.length === 0)
    return html`<p data-testid="timeline-empty">No health change or switch since the server started. The readiness monitor checks${' '}
      every adapter on <code>readiness.schedule</code>.</p>`
  return html`
    <p class="muted">Newest first; the server keeps the last ${capacity}.</p>
    <ol class="timeline" data-testid="timeline">
      ${[...events].reverse().map(
        (event) => html`<li class=${`timeline-${event.type}`}>
        <time datetime=${event.at} title=${event.at}>${formatTime(event.at)} <span class="muted">(${formatAgo(event.at)})</span></time>
        ${
          event.type === 'health'
            ? html`<span><strong>${event.adapter}</strong> ${event.from} → <${Badge} value=${event.to} /></span>`
            : html`<span><strong>Active adapter</strong> ${event.from} → ${event.to}</span>`
        }
        ${event.reason ? html`<span class="reason">${event.reason}</span>` : null}
      </li>`,
      )}
    </ol>
  `
}

/** Every node of the fabric from the shared registry: its adapters' health, slots and queues, live sandboxes. */
function NodeTable({ status }: { status: ExecgateStatus }) {
  const total = (
    node: FabricNode,
    pick: (item: NonNullable<NonNullable<FabricNode['status']>['admission']>['adapters'][number]) => number,
  ) => (node.status?.admission?.adapters ?? []).reduce((sum, item) => sum + pick(item), 0)
  return html`
    <div class="table-scroll">
      <table class="data" data-testid="node-table">
        <caption class="visually-hidden">Nodes of the fabric</caption>
        <thead><tr><th scope="col">Node</th><th scope="col">URL</th><th scope="col">Adapters</th><th scope="col">Slots in use</th>
          <th scope="col">Queued</th><th scope="col">Sandboxes</th><th scope="col">Last heartbeat</th></tr></thead>
        <tbody>
          ${(status.nodes ?? []).map(
            (node) => html`<tr data-node=${node.id}>
              <th scope="row"><code>${node.id}</code>${node.id === status.node ? html` <span class="muted">(this node)</span>` : null}</th>
              <td>${node.url ?? html`<span class="muted">none</span>`}</td>
              <td>${(node.status?.adapters ?? []).map((adapter) => `${adapter.name} ${adapter.health}`).join(', ')}</td>
              <td>${total(node, (item) => item.inUse.interactive + item.inUse.batch)}</td>
              <td>${total(node, (item) => item.queued.interactive + item.queued.batch)}</td>
              <td>${node.status?.sandboxes ?? 0}</td>
              <td><time datetime=${node.heartbeatAt}>${formatTime(node.heartbeatAt)}</time></td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>
  `
}
