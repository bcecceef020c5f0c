import { html } from '../html'

/** A page's facts as name/value pairs; a fact with no value (undefined or empty) is left out rather than shown blank. */
export function FactList({ facts }: { facts: [string, unknown][] }) {
  return html`<dl class="facts">${facts
    .filter(([, value]) => value !== undefined && value !== '')
    .map(
      ([name, value]) => html`<div><dt>${name}</dt>
    <dd>${String(value)}</dd></div>`,
    )}</dl>`
}
