import { describeFailure } from '../api'
import { html } from '../html'

/** An API error or any failure, in the server's own words; announced at once to screen readers. */
export function ErrorMessage({ error, context }: { error: unknown; context?: string }) {
  if (!error) return null
  return html`<div class="error-message" role="alert"><strong>${context ?? 'Error'}:</strong> ${describeFailure(error)}</div>`
}

/** A tone per word: status of a run, state of a task, health of an adapter, breaker, enforcement. */
const TONES: Record<string, 'good' | 'bad' | 'warn' | 'busy' | 'muted'> = {
  ok: 'good',
  allowed: 'good',
  verified: 'good',
  available: 'good',
  COMPLETED: 'good',
  closed: 'good',
  hard: 'good',
  error: 'bad',
  denied: 'bad',
  'not verified': 'bad',
  internal_error: 'bad',
  unavailable: 'bad',
  FAILED: 'bad',
  open: 'bad',
  none: 'bad',
  memory_limit: 'bad',
  policy_violation: 'bad',
  invalid_request: 'bad',
  timeout: 'warn',
  output_limit: 'warn',
  degraded: 'warn',
  SUSPENDED: 'warn',
  'half-open': 'warn',
  soft: 'warn',
  cancelled: 'warn',
  TERMINATED: 'warn',
  not_implemented: 'warn',
  PENDING: 'busy',
  SPAWNING: 'busy',
  RUNNING: 'busy',
  REVISING: 'warn',
}

/** The tone a word is shown in (badges, graph nodes). */
export function toneOf(value: string): string {
  return TONES[value] ?? 'muted'
}

/** A word in a coloured pill; the word itself carries the meaning (colour is never the only cue). */
export function Badge({ value, label }: { value: string; label?: string }) {
  return html`<span class=${`badge tone-${toneOf(value)}`} data-value=${value}>${label ?? value.replace(/_/g, ' ')}</span>`
}

export function Loading({ what }: { what: string }) {
  return html`<p class="loading" role="status">Loading ${what}…</p>`
}
