import fs from 'node:fs'
import path from 'node:path'
import type { Output } from '../core'

/**
 * `execgate run … --out DIR`: each rich output as a file, numbered in the order the code made it — a chart as
 * `output-1.png` (or `.svg`), a table as CSV with its header (`output-2.csv`, the rows the result holds), HTML as
 * `.html`, a JSON item as `.json`. Existing files of the same name are replaced.
 */

function csvCell(value: unknown): string {
  const text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value)
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
}

function fileOf(output: Output): { extension: string; bytes: Buffer | string } {
  switch (output.kind) {
    case 'image':
      return { extension: output.mimeType === 'image/svg+xml' ? 'svg' : 'png', bytes: Buffer.from(output.data, 'base64') }
    case 'table':
      return { extension: 'csv', bytes: [output.columns, ...output.rows].map((row) => row.map(csvCell).join(',')).join('\n') + '\n' }
    case 'html':
      return { extension: 'html', bytes: output.data }
    case 'json':
      return { extension: 'json', bytes: JSON.stringify(output.data, null, 2) + '\n' }
  }
}

/** Writes the outputs under `directory` (made if missing) and answers the paths written. */
export function writeOutputFiles(directory: string, outputs: readonly Output[]): string[] {
  fs.mkdirSync(directory, { recursive: true })
  return outputs.map((output, index) => {
    const { extension, bytes } = fileOf(output)
    const target = path.join(directory, `output-${index + 1}.${extension}`)
    fs.writeFileSync(target, bytes)
    return target
  })
}
