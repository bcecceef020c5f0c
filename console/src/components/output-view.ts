import type { ExecutionResult } from '../api-types'
import { formatJson } from '../format'
import { html } from '../html'

type Output = NonNullable<ExecutionResult['outputs']>[number]

/**
 * A run's rich outputs, in order: charts as images (a data: URL; an SVG in an <img> runs no script), tables as
 * tables with their row count, JSON as text. HTML items are shown as their source, never rendered: they are the
 * code's, and the console's page is the caller's.
 */
function OneOutput({ output, index }: { output: Output; index: number }) {
  switch (output.kind) {
    case 'image':
      return html`<figure class="output-image">
        <img src=${`data:${output.mimeType};base64,${output.data}`}
        alt=${`Chart ${index + 1} the code made (${output.mimeType}, ${output.bytes} bytes)`} />
        <figcaption>Output ${index + 1}: ${output.mimeType}, ${output.bytes} bytes</figcaption></figure>`
    case 'table':
      return html`<figure class="output-table"><table><thead><tr>
        ${output.columns.map((column) => html`<th scope="col">${column}</th>`)}</tr></thead><tbody>
        ${output.rows.map(
          (row) =>
            html`<tr>${row.map(
              (cell) => html`<td>
        ${typeof cell === 'string' ? cell : formatJson(cell)}</td>`,
            )}</tr>`,
        )}</tbody></table>
        <figcaption>Output ${index + 1}: ${
          output.rows.length < output.rowCount ? `first ${output.rows.length} of ${output.rowCount} rows` : `${output.rowCount} rows`
        }</figcaption></figure>`
    case 'html':
      return html`<figure class="output-html"><pre>${output.data}</pre>
        <figcaption>Output ${index + 1}: HTML (shown as source)</figcaption></figure>`
    case 'json':
      return html`<figure class="output-json"><pre>${formatJson(output.data)}</pre>
        <figcaption>Output ${index + 1}: JSON</figcaption></figure>`
  }
}

export function OutputsView({ outputs }: { outputs: ExecutionResult['outputs'] }) {
  if (!outputs?.length) return null
  return html`<div class="outputs" data-testid="run-outputs"><h3>Outputs</h3>
    ${outputs.map((output, index) => html`<${OneOutput} output=${output} index=${index} />`)}</div>`
}
