import htm from 'htm'
import { h, type VNode } from 'preact'

/** JSX-like templates without a compile step of their own: html`<p>${text}</p>` (htm, bound to preact's h). */
export const html = htm.bind(h) as (strings: TemplateStringsArray, ...values: unknown[]) => VNode
