import type { UploadIndex } from '../files/upload-index'
import type { LedgerRecordStore } from '../ledger/record-store'
import type { PlanStore } from '../plans/plan-store'
import type { SandboxRegistry } from '../sandboxes/sandbox-registry'
import type { SessionRegistry } from '../sessions/session-registry'
import type { TaskDispatcher } from '../tasks/bullmq-dispatcher'
import type { OutputRelay } from '../tasks/output-relay'
import type { TaskStore } from '../tasks/task-store'

/** The `fabric` keys every driver opens its stores from (each driver reads the ones it needs). */
export interface FabricStoreSettings {
  /** `fabric.dataDir`: where the embedded stores keep their files. */
  dataDir: string
  /** `fabric.redisUrl` and `fabric.redisPrefix`: the shared store's server and key prefix. */
  redisUrl: string
  redisPrefix: string
  /** `fabric.leaseMs`: how long a worker's claim on a run outlives its last renewal. */
  leaseMs: number
}

/**
 * One store kind (unstorage's driver): how each store of the fabric opens on it. Services above speak only the store
 * interfaces; the rules (scheduling, plan revisions, the ledger's chain) live above the stores, so every driver
 * behaves the same, which test/fabric/drivers.test.ts checks against each.
 */
export interface FabricStoreDriver {
  /** One line for the docs: where this kind keeps things. */
  description: string
  /** Several nodes share this kind's stores: sandboxes, sessions and plans are followed across nodes. */
  shared: boolean
  tasks(settings: FabricStoreSettings): TaskStore
  /**
   * How due tasks reach processes; undefined where the scheduler polls its store. `tasks`: the task store it announces
   * for, opened by this driver (the Redis driver can announce on its connection: TaskDispatcher.dispatchBehindStoreWrites).
   */
  taskDispatcher(settings: FabricStoreSettings, tasks?: TaskStore): TaskDispatcher | undefined
  /** Optional: how runs' rich outputs reach readers on other processes; without it a reader hears its own process's. */
  outputRelay?(settings: FabricStoreSettings): OutputRelay
  /**
   * `tasks`: the task store the plans' steps go to, opened by this driver (the Redis driver sends a plan's insert on
   * its connection, so that the plan lands before its steps: PlanStore.insertLandsBeforeTasks).
   */
  plans(settings: FabricStoreSettings, tasks?: TaskStore): PlanStore
  ledgerRecords(settings: FabricStoreSettings): LedgerRecordStore
  sandboxRegistry(settings: FabricStoreSettings): SandboxRegistry
  sessionRegistry(settings: FabricStoreSettings): SessionRegistry
  /** Where uploads are indexed by digest; undefined: the upload store's own file beside the uploads (one node). */
  uploadIndex(settings: FabricStoreSettings): UploadIndex | undefined
}
