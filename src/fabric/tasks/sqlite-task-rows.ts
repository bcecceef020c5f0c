import type { Task, TaskEvent, TaskState } from './task-types'

/** The SQLite task store's tables and the rows it reads back (sqlite-task-store.ts). */

// seq is a plain INTEGER PRIMARY KEY (the next is the largest + 1), not AUTOINCREMENT: rows are never deleted, so the
// order is the same, and a commit no longer rewrites the sqlite_sequence page (~5 µs of each, measured). Files made
// with AUTOINCREMENT keep it (CREATE … IF NOT EXISTS) and behave the same.
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS tasks (
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  tenant TEXT NOT NULL,
  state TEXT NOT NULL,
  priority INTEGER NOT NULL,
  ready INTEGER NOT NULL,
  not_before INTEGER NOT NULL,
  deadline_at INTEGER,
  attempts INTEGER NOT NULL,
  intent_id TEXT,
  idempotency_key TEXT,
  body TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS tasks_idempotency ON tasks (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_due ON tasks (state, ready, priority DESC, seq);
CREATE INDEX IF NOT EXISTS tasks_tenant ON tasks (tenant, seq);
CREATE TABLE IF NOT EXISTS task_dependencies (
  depends_on TEXT NOT NULL,
  task_id TEXT NOT NULL,
  PRIMARY KEY (depends_on, task_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS task_events (
  seq INTEGER PRIMARY KEY,
  task_id TEXT NOT NULL,
  at TEXT NOT NULL,
  from_state TEXT,
  to_state TEXT NOT NULL,
  reason TEXT NOT NULL,
  attempt INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS task_events_task ON task_events (task_id, seq);
`

/** One row of the action log, in its INSERT's column order: task id, at, from, to, reason, attempt. */
export type EventValues = [taskId: string, at: string, from: TaskState | null, to: TaskState, reason: string, attempt: number]

export interface EventRow {
  seq: number
  task_id: string
  at: string
  from_state: TaskState | null
  to_state: TaskState
  reason: string
  attempt: number
}

export function eventFrom(row: EventRow): TaskEvent {
  return { seq: row.seq, taskId: row.task_id, at: row.at, from: row.from_state, to: row.to_state, reason: row.reason, attempt: row.attempt }
}

export function parse(row: unknown): Task | undefined {
  return row ? (JSON.parse((row as { body: string }).body) as Task) : undefined
}
