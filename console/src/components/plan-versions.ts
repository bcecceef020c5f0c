import type { Plan, PlanChanges, PlanVersion } from '../api-types-fabric'
import { formatDateTime } from '../format'
import { html } from '../html'
import { Badge } from './feedback'

const KINDS: { key: keyof PlanChanges; word: string }[] = [
  { key: 'added', word: 'Added' },
  { key: 'removed', word: 'Removed' },
  { key: 'changed', word: 'Changed' },
  { key: 'reused', word: 'Reused' },
]

/** A plan's versions, first to last: why each exists, the reflector's note, and what it changed against the one before. */
export function PlanVersions({ plan }: { plan: Plan }) {
  return html`
    <section class="panel" aria-labelledby="versions-title">
      <h2 id="versions-title">Versions</h2>
      <ol class="versions" data-testid="plan-versions">
        ${plan.versions.map(
          (version, index) => html`<${VersionEntry} version=${version} previous=${plan.versions[index - 1]}
          current=${version.version === plan.version} />`,
        )}
      </ol>
    </section>
  `
}

function VersionEntry({ version, previous, current }: { version: PlanVersion; previous?: PlanVersion; current: boolean }) {
  const changes = version.changes
  return html`
    <li data-version=${version.version}>
      <h3>Version ${version.version}${current ? html` <span class="badge tone-busy">current</span>` : null} <time class="muted small"
        datetime=${version.createdAt}>${formatDateTime(version.createdAt)}</time></h3>
      <p class="reason"><strong>Why:</strong> ${version.reason}</p>
      ${version.note ? html`<p class="reason"><strong>Reflector's note:</strong> ${version.note}</p>` : null}
      ${
        changes
          ? html`<dl class="changes">
            ${KINDS.map(
              ({ key, word }) => html`<div data-change=${key}><dt>${word}</dt><dd>
              ${changes[key].length ? changes[key].map((id) => html`<code>${id}</code> `) : html`<span class="muted">none</span>`}</dd>
              </div>`,
            )}
          </dl>`
          : html`<p class="muted">The plan as submitted: ${version.steps.length} step${version.steps.length === 1 ? '' : 's'}.</p>`
      }
      <details>
        <summary>Steps of version ${version.version}${changes?.changed.length ? ', with the code each change replaced' : ''}</summary>
        <ul class="version-steps">
          ${version.steps.map((step) => {
            const before = changes?.changed.includes(step.id) ? previous?.steps.find((item) => item.id === step.id) : undefined
            return html`<li>
              <strong>${step.id}</strong> <span class="muted">${step.language}
                ${step.dependsOn?.length ? `, after ${step.dependsOn.join(', ')}` : ''}
                ${step.reusedFrom ? `, reused from version ${step.reusedFrom}` : ''}</span>
              ${
                before
                  ? html`<div class="code-pair"><div><span class="small muted">version ${previous!.version}</span><pre class="code removed">
                    ${before.code}</pre></div><div><span class="small muted">version ${version.version}</span><pre class="code added">
                    ${step.code}</pre></div></div>`
                  : html`<pre class="code">${step.code}</pre>`
              }
            </li>`
          })}
        </ul>
      </details>
    </li>
  `
}

/** Every answer of the reflector: accepted (a version) or refused (with the reason); each counts against maxRevisions. */
export function PlanRevisions({ plan }: { plan: Plan }) {
  if (plan.revisions.length === 0) return null
  return html`
    <section class="panel" aria-labelledby="revisions-title">
      <h2 id="revisions-title">Revision attempts</h2>
      <div class="table-scroll">
        <table class="data" data-testid="plan-revisions">
          <caption class="visually-hidden">The reflector's answers, accepted or refused</caption>
          <thead><tr><th scope="col">Attempt</th><th scope="col">Failed step</th><th scope="col">Answer</th><th scope="col">Version</th>
            <th scope="col">Reason or note</th></tr></thead>
          <tbody>
            ${plan.revisions.map(
              (revision) => html`<tr data-accepted=${String(revision.accepted)}>
              <th scope="row">${revision.attempt}</th>
              <td><code>${revision.stepId}</code></td>
              <td><${Badge} value=${revision.accepted ? 'ok' : 'error'} label=${revision.accepted ? 'accepted' : 'refused'} /></td>
              <td>${revision.version ?? '—'}</td>
              <td class="reason">${revision.reason}</td>
            </tr>`,
            )}
          </tbody>
        </table>
      </div>
    </section>
  `
}
