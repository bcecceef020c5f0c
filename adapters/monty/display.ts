/**
 * `display(value, mime=None)` for Python on monty: the same rich outputs as quickjs's display() and the data Python's
 * (docs/data.md#rich-outputs). A list of dicts or `{'columns': …, 'rows': …}` becomes a table, an SVG string an
 * `image/svg+xml`, a string of other markup HTML, any other value JSON; `mime` decides the kind. monty has no
 * `display` of its own: the worker resolves the name to a stand-in function, and each call reaches `MontyDisplay.show`
 * here with the arguments already plain JSON (to-json.ts). Items are sent the moment the code makes them; those past
 * the policy's `maxOutputs` or `outputsBytes` are left out and counted, and the host checks every item again.
 */

const SVG = /^\s*(<\?xml[^>]*>\s*)?(<!--[\s\S]*?-->\s*)*<svg[\s>]/i
const MIME_TYPES = ['text/html', 'image/svg+xml', 'application/json']
const MAX_TABLE_ROWS = 1000

export interface MontyDisplayLimits {
  maxOutputs: number
  outputsBytes: number
  /** The output cap: a table keeps the first rows that fit it (and what is left of `outputsBytes`). */
  tableBytes: number
}

/** Finds `display(` in the code: only then does a run take the worker's path that can answer it. */
export function usesDisplay(code: string): boolean {
  return /\bdisplay\s*\(/.test(code)
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

export class MontyDisplay {
  private count = 0
  private bytes = 0
  /** Items left out for the limits, reported to the host as the runner's `outputsOmitted`. */
  omitted = 0

  constructor(
    private readonly limits: MontyDisplayLimits,
    private readonly send: (item: unknown) => void,
  ) {}

  /** One call of display(); throws a TypeError (raised in the code) for a value it cannot show. */
  show(args: unknown[], kwargs: Record<string, unknown> = {}): void {
    const unknown = Object.keys(kwargs).find((name) => name !== 'mime')
    if (unknown) throw new TypeError(`display() got an unexpected keyword argument '${unknown}'`)
    if (args.length === 0) throw new TypeError('display() needs a value to show')
    const [value, mime = kwargs.mime] = args
    if (mime !== undefined && mime !== null && (typeof mime !== 'string' || !MIME_TYPES.includes(mime)))
      throw new TypeError(`display(value, mime): mime must be one of ${MIME_TYPES.join(', ')}`)
    const wanted = (mime ?? undefined) as string | undefined
    if (typeof value === 'string' && (wanted === 'image/svg+xml' || (wanted === undefined && SVG.test(value)))) {
      const data = Buffer.from(value, 'utf8')
      return this.emit({ kind: 'image', mimeType: 'image/svg+xml', data: data.toString('base64') }, data.length)
    }
    if (typeof value === 'string' && (wanted === 'text/html' || (wanted === undefined && value.trimStart().startsWith('<'))))
      return this.emit({ kind: 'html', mimeType: 'text/html', data: value }, Buffer.byteLength(value))
    if (wanted === 'text/html' || wanted === 'image/svg+xml')
      throw new TypeError(`display(value, '${wanted}'): the value must be a string of markup`)
    if (wanted === undefined && Array.isArray(value) && value.length > 0 && value.every(isRecord)) return this.recordsTable(value)
    if (
      wanted === undefined &&
      isRecord(value) &&
      Array.isArray(value.columns) &&
      Array.isArray(value.rows) &&
      Object.keys(value).length === 2
    )
      return this.columnsTable(value.columns, value.rows)
    const data = value ?? null
    this.emit({ kind: 'json', mimeType: 'application/json', data }, Buffer.byteLength(JSON.stringify(data)))
  }

  private recordsTable(records: Record<string, unknown>[]): void {
    const columns: string[] = []
    for (const record of records.slice(0, MAX_TABLE_ROWS))
      for (const name of Object.keys(record)) if (!columns.includes(name)) columns.push(name)
    const rowAt = (index: number) => columns.map((name) => (Object.hasOwn(records[index]!, name) ? records[index]![name] : null))
    this.table(columns, rowAt, records.length)
  }

  private columnsTable(columns: unknown[], rows: unknown[]): void {
    const bad = rows.findIndex((row) => !Array.isArray(row))
    if (bad >= 0) throw new TypeError(`display({'columns': …, 'rows': …}): every row must be a list (row ${bad} is not)`)
    this.table(
      columns.map((column) => (typeof column === 'string' ? column : JSON.stringify(column))),
      (index) => rows[index] as unknown[],
      rows.length,
    )
  }

  /** The first rows (at most MAX_TABLE_ROWS) that fit what the run may still show; `rowCount` is the whole table's. */
  private table(columns: string[], rowAt: (index: number) => unknown[], rowCount: number): void {
    let budget = Math.min(this.limits.outputsBytes - this.bytes, this.limits.tableBytes) - Buffer.byteLength(JSON.stringify(columns)) - 64
    const rows: unknown[][] = []
    for (let index = 0; index < Math.min(rowCount, MAX_TABLE_ROWS); index++) {
      const row = rowAt(index)
      const size = Buffer.byteLength(JSON.stringify(row)) + 1
      if (size > budget) break
      budget -= size
      rows.push(row)
    }
    this.emit({ kind: 'table', columns, rows, rowCount }, Buffer.byteLength(JSON.stringify({ columns, rows })))
  }

  private emit(output: Record<string, unknown>, bytes: number): void {
    if (this.count >= this.limits.maxOutputs || this.bytes + bytes > this.limits.outputsBytes) return void this.omitted++
    this.count++
    this.bytes += bytes
    this.send(output)
  }
}
