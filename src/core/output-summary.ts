import type { Output } from './types'

/**
 * Rich outputs in words and plain text, for the surfaces that cannot draw them: an MCP tool's text, the CLI, a voice
 * turn. One wording everywhere, so an agent reading any of them learns the same thing.
 */

type Table = Extract<Output, { kind: 'table' }>

function plural(count: number, word: string): string {
  return `${count === 1 ? 'a' : count} ${word}${count === 1 ? '' : 's'}`
}

/** What a run made, in words: "2 charts (PNG), a table (region, revenue; 3 rows)". Empty when it made nothing. */
export function describeOutputs(outputs: readonly Output[] | undefined): string {
  if (!outputs?.length) return ''
  const images = outputs.filter((output) => output.kind === 'image')
  const tables = outputs.filter((output): output is Table => output.kind === 'table')
  const parts: string[] = []
  if (images.length) {
    const formats = [...new Set(images.map((image) => (image.mimeType === 'image/svg+xml' ? 'SVG' : 'PNG')))]
    parts.push(`${plural(images.length, 'chart')} (${formats.join(', ')})`)
  }
  for (const table of tables) parts.push(`a table (${table.columns.join(', ')}; ${table.rowCount} row${table.rowCount === 1 ? '' : 's'})`)
  const others = outputs.length - images.length - tables.length
  if (others) parts.push(plural(others, 'displayed item'))
  return parts.join(', ')
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : String(Math.round(value * 1000) / 1000)
  return typeof value === 'string' ? value : JSON.stringify(value)
}

/** A table as Markdown, its first `maxRows` rows, with a line saying how many it had when more. */
export function tableMarkdown(table: Table, maxRows = 20): string {
  const escape = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ')
  const lines = [
    `| ${table.columns.map(escape).join(' | ')} |`,
    `| ${table.columns.map(() => '---').join(' | ')} |`,
    ...table.rows.slice(0, maxRows).map((row) => `| ${row.map((value) => escape(cell(value))).join(' | ')} |`),
  ]
  const shown = Math.min(maxRows, table.rows.length)
  if (shown < table.rowCount) lines.push(`(${shown} of ${table.rowCount} rows)`)
  return lines.join('\n')
}

/**
 * A table's numbers as a sentence to speak: "east 7.25, north 15, south 20" for a label column and a number column,
 * the first `maxRows` rows; undefined when the table has no numbers to speak.
 */
export function spokenTable(table: Table, maxRows = 5, number: (value: number) => string = cell): string | undefined {
  const numeric = table.columns.findIndex((_, index) => table.rows.some((row) => typeof row[index] === 'number'))
  if (numeric === -1 || table.rows.length === 0) return undefined
  const label = table.columns.findIndex((_, index) => index !== numeric && table.rows.every((row) => typeof row[index] === 'string'))
  const spoken = table.rows.slice(0, maxRows).map((row) => {
    const raw = row[numeric]
    const value = typeof raw === 'number' ? number(raw) : cell(raw)
    return label === -1 ? value : `${cell(row[label])} ${value}`
  })
  const more = table.rowCount > maxRows ? `, and ${table.rowCount - maxRows} more` : ''
  return `${table.columns[numeric]}: ${spoken.join(', ')}${more}`
}
