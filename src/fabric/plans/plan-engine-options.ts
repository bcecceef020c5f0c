import type { Logger } from '../../observability/logger'
import type { TaskReader, TaskService, WorkspaceAccess } from '../tasks'
import type { StepCheck } from './plan-revision'
import type { PlanStore } from './plan-store'
import type { PlanWorkspaceKind } from './plan-types'
import type { Reflector } from './reflector'
import type { PlanVersionRecorder } from './plan-versions'

/** The `fabric.plans` settings the engine runs by. */
export interface PlanSettings {
  /** Revisions a plan may have (refused ones count); a plan may ask for fewer. */
  maxRevisions: number
  maxSteps: number
  /** Workspace access every step's runs get over the caller's policy, so it reads its inputs; undefined grants none. */
  workspaceAccess?: WorkspaceAccess
  /** Modules the steps may import, told to the reflector (the policy's static checks enforce it). */
  allowedImports: readonly string[]
  /** Where steps' workspaces live for a plan that does not say (`fabric.plans.workspaces`). @default 'memory' */
  workspaces?: PlanWorkspaceKind
  /** Whether a bucket is configured (`fabric.s3.bucket`): a plan may keep its steps' workspaces there only then. */
  bucket?: boolean
}

export interface PlanEngineOptions {
  store: PlanStore
  tasks: TaskService
  /** The tasks' store, read through its interface: the steps' tasks and their action logs (the task service's own store). */
  taskStore: TaskReader
  check: StepCheck
  settings: PlanSettings
  /** Without one, a failed step fails its plan at once. */
  reflector?: Reflector
  /** Records every version (the first, and each accepted revision) before its steps run: the artifact ledger's. */
  recordVersion?: PlanVersionRecorder
  logger?: Logger
  /** How often plans whose steps run in other processes are looked at, in ms. @default 1000 */
  tickMs?: number
  /** This engine's name in `plan.owner` while it revises a plan, and of its leases. @default host:pid#n (src/fabric/owner-id.ts) */
  owner?: string
  /** Whether the owner of a revision still runs. @default the store's lease when it keeps them, else its pid on this host */
  ownerAlive?: (owner: string) => boolean | Promise<boolean>
  /** `fabric.leaseMs`: the upper bound of the driver and revision leases below. @default 30000 */
  leaseMs?: number
  /**
   * How long the driver lease (`<prefix>:plans:driver`) and this engine's revision lease (`<prefix>:plans:engine:
   * <owner>`) outlive their last renewal, which is every tick: a driver, or a node revising a plan, killed mid-plan is
   * replaced this soon rather than after `leaseMs`. Two drivers or revisers for a moment (one paused past it) are
   * harmless: every plan write is a compare-and-set. @default min(leaseMs, max(2000, 5 × tickMs))
   */
  driverLeaseMs?: number
}

export interface PlanCaller {
  tenant: string
  profile?: string
}
