import path from 'node:path'
import { LEDGER_SQLITE_FILE_NAME, SqliteLedgerStore } from '../ledger/sqlite-ledger-store'
import { SqlitePlanStore } from '../plans/sqlite-plan-store'
import { MemorySandboxRegistry } from '../sandboxes/sandbox-registry'
import { MemorySessionRegistry } from '../sessions/session-registry'
import { SqliteTaskStore, TASKS_SQLITE_FILE_NAME } from '../tasks/sqlite-task-store'
import type { FabricStoreDriver } from './types'

/**
 * The embedded store, the default: tasks and plans in `tasks.sqlite`, ledger records in `ledger.sqlite`, both in
 * `fabric.dataDir` (libsql loaded at the first open); sandboxes and sessions known to this process only.
 */
export const SQLITE_DRIVER: FabricStoreDriver = {
  description: 'embedded SQLite files in fabric.dataDir; one node',
  shared: false,
  tasks: (settings) => new SqliteTaskStore({ file: path.join(settings.dataDir, TASKS_SQLITE_FILE_NAME) }),
  // The scheduler polls its own file: nothing to dispatch through.
  taskDispatcher: () => undefined,
  plans: (settings) => new SqlitePlanStore({ file: path.join(settings.dataDir, TASKS_SQLITE_FILE_NAME) }),
  ledgerRecords: (settings) => new SqliteLedgerStore({ file: path.join(settings.dataDir, LEDGER_SQLITE_FILE_NAME) }),
  sandboxRegistry: () => new MemorySandboxRegistry(),
  sessionRegistry: () => new MemorySessionRegistry(),
  uploadIndex: () => undefined,
}
