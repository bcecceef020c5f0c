/**
 * The one order due tasks start in, whatever the store: higher `priority` first, then submission order (`seq`, the
 * store's insert counter: SQLite's row id, Redis's `seq` counter). Written once: the SQLite store's
 * `ORDER BY priority DESC, seq` is this order in SQL, and the Redis store sorts with this function; tasks submitted in
 * one batch, in the same millisecond, keep their order on both (test/fabric/drivers.test.ts).
 */
export interface DueKey {
  priority: number
  seq: number
}

export function compareDue(a: DueKey, b: DueKey): number {
  return b.priority - a.priority || a.seq - b.seq
}

/** The SQL of the same order, for a store whose rows carry `priority` and `seq` columns. */
export const DUE_ORDER_SQL = 'priority DESC, seq'
