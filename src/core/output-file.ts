import type { Output } from './types'

/**
 * A rich output as a file: a chart as PNG or SVG, a table as CSV with its header (the rows the result holds), HTML
 * as `.html`, a JSON item as `.json`, named `output-<n>` by its place in the run's outputs (1-based). The CLI's
 * `--out DIR` writes these; the artifact ledger records them as files the run generated.
 */
export interface OutputFile {
  name: string
  mediaType: string
  /** base64 for images, UTF-8 text for the rest. */
  content: string
  encoding: 'utf8' | 'base64'
}

function csvCell(value: unknown): string {
  const text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value)
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

export function outputFile(output: Output, index: number): OutputFile {
  const name = (extension: string) => `output-${index + 1}.${extension}`
  switch (output.kind) {
    case 'image':
      return output.mimeType === 'image/svg+xml'
        ? { name: name('svg'), mediaType: output.mimeType, content: output.data, encoding: 'base64' }
        : { name: name('png'), mediaType: output.mimeType, content: output.data, encoding: 'base64' }
    case 'table':
      return {
        name: name('csv'),
        mediaType: 'text/csv',
        content: [output.columns, ...output.rows].map((row) => row.map(csvCell).join(',')).join('\n') + '\n',
        encoding: 'utf8',
      }
    case 'html':
      return { name: name('html'), mediaType: 'text/html', content: output.data, encoding: 'utf8' }
    case 'json':
      return { name: name('json'), mediaType: 'application/json', content: JSON.stringify(output.data, null, 2) + '\n', encoding: 'utf8' }
  }
}
