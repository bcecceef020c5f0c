import { useState } from 'preact/hooks'
import { PLAN_STATES, type PlanState, type PlanSummary } from '../api-types-fabric'
import { Badge, ErrorMessage, Loading } from '../components/feedback'
import { formatTime, shortId } from '../format'
import { usePolling } from '../hooks'
import { html } from '../html'
import type { PageProps } from '../pages'
import { href } from '../router'

const REFRESH_MS = 2000
const PAGE_SIZE = 50
/** GET /v1/plans answers at most this many at once. */
const MOST = 500

/** The filter, kept while the user opens a plan and comes back. */
const remembered: { state: PlanState | '' } = { state: '' }

/** Plans: the caller's plans, newest first, filtered by state, refreshed live. */
export function PlansPage({ api }: PageProps) {
  const [state, setState] = useState<PlanState | ''>(remembered.state)
  const [limit, setLimit] = useState(PAGE_SIZE)
  remembered.state = state
  const query = new URLSearchParams({ order: 'newest', limit: String(limit), ...(state ? { state } : {}) })
  const live = usePolling(
    (signal) => api.get<{ plans: PlanSummary[]; nextCursor?: string }>(`/v1/plans?${query}`, { signal }),
    REFRESH_MS,
    [api, query.toString()],
  )
  const page = live.data

  return html`
    <h1 id="page-title" tabindex="-1">Plans</h1>
    <p class="lede">Your plans, newest first: DAGs of code steps, each step a durable task, revised by the reflector when a step${' '}
      fails. Updates every ${REFRESH_MS / 1000} s.</p>
    <div class="controls">
      <div class="field">
        <label for="plan-state">State</label>
        <select id="plan-state" value=${state} onChange=${(event: Event) =>
          setState((event.currentTarget as HTMLSelectElement).value as PlanState | '')}>
          <option value="">any</option>
          ${PLAN_STATES.map((item) => html`<option value=${item}>${item}</option>`)}
        </select>
      </div>
      <a class="button primary" href=${href('plans/new')}>Submit a plan</a>
    </div>
    <${ErrorMessage} error=${live.error} context="Could not refresh" />
    ${
      !page
        ? live.error
          ? null
          : html`<${Loading} what="plans" />`
        : page.plans.length === 0
          ? html`<p data-testid="no-plans">No plan${state ? ' in this state' : ' yet'}.</p>`
          : html`
            <div class="table-scroll">
              <table class="data" data-testid="plan-table">
                <caption class="visually-hidden">Plans${state ? ` in state ${state}` : ''}, newest first</caption>
                <thead><tr><th scope="col">Plan</th><th scope="col">Goal</th><th scope="col">State</th><th scope="col">Version</th>
                  <th scope="col">Steps</th><th scope="col">Revisions</th><th scope="col">Created</th><th scope="col">Updated</th>
                  <th scope="col">Reason</th></tr></thead>
                <tbody>
                  ${page.plans.map(
                    (plan) => html`<tr data-plan=${plan.id} data-state=${plan.state}>
                    <th scope="row"><a href=${href(`plans/${plan.id}`)} title=${plan.id}
                      aria-label=${`Plan ${plan.id}`}><code>${shortId(plan.id)}</code></a></th>
                    <td>${plan.goal ?? html`<span class="muted">—</span>`}</td>
                    <td><${Badge} value=${plan.state} /></td>
                    <td>${plan.version}</td>
                    <td>${plan.steps}</td>
                    <td>${plan.revisions} of ${plan.maxRevisions}</td>
                    <td><time datetime=${plan.createdAt}>${formatTime(plan.createdAt)}</time></td>
                    <td><time datetime=${plan.updatedAt}>${formatTime(plan.updatedAt)}</time></td>
                    <td class="reason">${plan.reason}</td>
                  </tr>`,
                  )}
                </tbody>
              </table>
            </div>
            ${
              page.nextCursor && limit < MOST
                ? html`<button type="button"
              onClick=${() => setLimit(Math.min(MOST, limit + PAGE_SIZE))}>Show ${PAGE_SIZE} more</button>`
                : null
            }
          `
    }
  `
}
