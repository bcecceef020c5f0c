import type { Database, Statement } from './sqlite'

/**
 * INSERT … VALUES with up to ROWS rows a call (one prepared statement per row count used): libsql costs ~1.5 µs a
 * statement call and ~0.2 µs a bound value, so a batch's rows go in as few calls as the driver allows.
 */
export class RowInserter {
  /** Rows a statement at most. */
  static readonly ROWS = 16
  private readonly statements = new Map<number, Statement>()

  constructor(
    private readonly db: Database,
    private readonly head: string,
    private readonly width: number,
    private readonly tail = '',
  ) {}

  private statement(rows: number): Statement {
    let statement = this.statements.get(rows)
    if (!statement) {
      const row = `(${new Array(this.width).fill('?').join(', ')})`
      this.statements.set(rows, (statement = this.db.prepare(`${this.head} ${new Array(rows).fill(row).join(', ')} ${this.tail}`)))
    }
    return statement
  }

  /**
   * Inserts `values`, `width` a row, and answers how many rows went in (those an `OR IGNORE` or `ON CONFLICT … DO
   * NOTHING` skipped are not counted). Each call's values go as one array: libsql binds it as it is, where spread
   * arguments are copied first.
   */
  insert(values: readonly unknown[]): number {
    let changes = 0
    for (const part of this.parts(values)) changes += this.statement(part.length / this.width).run(part).changes
    return changes
  }

  /**
   * Inserts `values` as `insert` does, for an inserter whose tail is a `RETURNING` clause: answers the rows it returned,
   * one per row that went in (those an `OR IGNORE` skipped return nothing).
   */
  insertReturning<R>(values: readonly unknown[]): R[] {
    const rows: R[] = []
    for (const part of this.parts(values)) rows.push(...(this.statement(part.length / this.width).all(part) as R[]))
    return rows
  }

  /** `values` in ROWS-row parts (one part, not copied, when it fits). */
  private *parts(values: readonly unknown[]): Generator<readonly unknown[]> {
    const step = RowInserter.ROWS * this.width
    if (values.length <= step) {
      if (values.length > 0) yield values
      return
    }
    for (let start = 0; start < values.length; start += step) yield values.slice(start, start + step)
  }
}
