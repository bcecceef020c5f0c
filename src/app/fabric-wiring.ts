import fs from 'node:fs'
import type { Container } from 'inversify'
import { ExecgateError, describeError, type AdapterRegistry, type LlmProvider } from '../core'
import type { Config } from '../config/load'
import type { ExecutionService } from '../execution/types'
import type { UploadStore } from '../fabric/files'
import { s3SettingsFrom, type LedgerService } from '../fabric/ledger'
import { createPlanService, decidesPlan, planServiceOptionsFrom, type PlanService, type PlanStore } from '../fabric/plans'
import { SandboxManager } from '../fabric/sandboxes'
import { SessionDirectory } from '../fabric/sessions'
import { nextOwnerId } from '../fabric/owner-id'
import { storeDriver } from '../fabric/drivers'
import { bucketTaskWorkspaces, createTaskService, type Task, type TaskService, type TaskStore } from '../fabric/tasks'
import type { Logger } from '../observability/logger'
import { policyFromConfig, profilesFromConfig } from '../policy'
import * as tokens from './tokens'
import { forwardedSandboxes } from './forwarded-sandbox'
import { S3Objects, type Workspace } from '../workspace'

/**
 * How the fabric's parts are joined (docs/architecture.md, "The fabric"): tasks, plans and sandboxes over one
 * execution service, each told of the ledger and the bucket through a small callback, never the ledger's or the
 * bucket's implementation, over the stores the container binds (a user's module may rebind them). Only
 * `createExecgate` builds them; `serve`, the CLI and `execgate worker` use an execgate (its `role` says whether it
 * runs tasks), so a plan driven by `execgate plan run --wait` or a step run by a worker is wired exactly like one
 * driven by a server.
 */
export interface FabricParts {
  config: Config
  service: ExecutionService
  ledger: LedgerService
  logger: Logger
  registry: AdapterRegistry
  /** The stores, resolved from the container at first use (a user's module may have rebound them). */
  taskStore: () => TaskStore
  planStore: () => PlanStore
  /** Files uploaded by digest (`PUT /v1/files`). */
  uploads: () => UploadStore
  /** This execgate's name in the runs it holds, the plans it revises and its leases (src/fabric/owner-id.ts). */
  owner: string
}

/** The parts from a container built by `createContainer` (the CLI has an execgate, not its pieces). */
export function fabricParts(container: Container): FabricParts {
  return {
    config: container.get<Config>(tokens.Config),
    service: container.get<ExecutionService>(tokens.ExecutionService),
    ledger: container.get<LedgerService>(tokens.Ledger),
    logger: container.get<Logger>(tokens.Logger),
    registry: container.get<AdapterRegistry>(tokens.AdapterRegistry),
    taskStore: () => container.get<TaskStore>(tokens.TaskStore),
    planStore: () => container.get<PlanStore>(tokens.PlanStore),
    uploads: () => container.get<UploadStore>(tokens.Uploads),
    owner: nextOwnerId(),
  }
}

/** Settings that only fail once a plan runs, checked at start-up instead: a plan's default workspace needs a bucket. */
export function checkFabricConfig(config: Config): void {
  if (config.fabric.plans.workspaces === 's3') s3SettingsFrom(config.fabric.s3, 'fabric.plans.workspaces')
}

/** Opens a task's bucket workspace (a plan step's), the SDK loaded at the first one; none without a bucket. */
function taskWorkspaces(config: Config): ((task: Task) => Promise<Workspace>) | undefined {
  if (!config.fabric.s3.bucket) return undefined
  let open: ((task: Task) => Promise<Workspace>) | undefined
  return (task) =>
    (open ??= bucketTaskWorkspaces(new S3Objects(s3SettingsFrom(config.fabric.s3, 'fabric.plans.workspaces')), config.workspace))(task)
}

/** Durable tasks over the execution service, in the store `fabric.store` names. `run: false` only submits and reads. */
export function taskServiceFor(parts: FabricParts, run: boolean): TaskService {
  const workspaceFor = taskWorkspaces(parts.config)
  const driver = storeDriver(parts.config.fabric.store)
  const dispatcher = driver.taskDispatcher(parts.config.fabric, parts.taskStore())
  // Runs' rich outputs to readers on every node (Redis pub/sub), not only this process's (docs/tasks.md#events).
  const outputRelay = driver.outputRelay?.(parts.config.fabric)
  return createTaskService({
    execute: (request, options) => parts.service.execute(request, options),
    // A resume that loosens the task's profile is refused at the resume, not found when the task runs.
    check: (request, options) => parts.service.check(request, options),
    ...(parts.service.isRepeatable ? { isRepeatable: (request, options) => parts.service.isRepeatable!(request, options) } : {}),
    concurrency: parts.config.fabric.concurrency,
    store: parts.taskStore(),
    ...(dispatcher ? { dispatcher } : {}),
    ...(outputRelay ? { outputRelay } : {}),
    run,
    logger: parts.logger,
    owner: parts.owner,
    ...(workspaceFor ? { workspaceFor } : {}),
  })
}

/**
 * On a store several machines share, every transition of a plan's step, in whichever process it happens (a worker's
 * run, a cancel), is announced on the plans' channel: the node driving plans advances the plan at once when the step
 * ended (`step`), and every node's event streams wake (docs/plans.md#many-nodes). Answers what closes the plan store
 * if only this opened it.
 */
export function announcePlanSteps(parts: FabricParts, tasks: TaskService): () => PlanStore | undefined {
  if (parts.config.fabric.store !== 'redis') return () => undefined
  let store: PlanStore | undefined
  // The transitions of one write (a claim and its start) are announced once: a `step` says all a `moved` says.
  const pending = new Map<string, 'step' | 'moved'>()
  const announce = (planId: string) => {
    const kind = pending.get(planId)!
    pending.delete(planId)
    ;(store ??= parts.planStore())
      .announceStep?.(planId, kind)
      .catch((error: unknown) => parts.logger.warn({ planId, err: describeError(error) }, 'a plan step transition was not announced'))
  }
  tasks.scheduler.onTransition((_event, task) => {
    const planId = task.provenance?.planId
    if (!planId) return
    const kind = decidesPlan(task.state) ? 'step' : 'moved'
    if (!pending.has(planId)) queueMicrotask(() => announce(planId))
    if (pending.get(planId) !== 'step') pending.set(planId, kind)
  })
  return () => store
}

/** Plans over `tasks`, their versions recorded in the ledger when it is on. */
export function planServiceFor(
  parts: FabricParts,
  tasks: TaskService,
  options: { run?: boolean; reflector?: LlmProvider } = {},
): PlanService {
  const { config, ledger } = parts
  return createPlanService({
    tasks,
    check: (request, checkOptions) => parts.service.check(request, checkOptions),
    ...planServiceOptionsFrom(config.fabric, config.security.defaultPolicy.allowedImports, options.reflector),
    store: parts.planStore(),
    // The plans read their steps' tasks from the store the task service runs on, through its interface.
    taskStore: parts.taskStore(),
    // Each version in the ledger, so its steps' runs name it (prov:plan) and revisions link (wasRevisionOf).
    ...(config.fabric.ledger.enabled ? { recordVersion: (version) => ledger.queuePlanVersion(version) } : {}),
    ...(options.run === false ? { run: false } : {}),
    logger: parts.logger,
    owner: parts.owner,
  })
}

/**
 * Sessions across nodes: which node holds each session, and monty's state after each call, in the store `fabric.store`
 * names; active once the node serves (the sandbox manager advertised its URL), so a library keeps its sessions its own.
 */
export function sessionDirectoryFor(parts: FabricParts, sandboxes: SandboxManager): SessionDirectory {
  const { config } = parts
  return new SessionDirectory({
    registry: () => storeDriver(config.fabric.store).sessionRegistry(config.fabric),
    // One node with a store no other node shares has nobody to share sessions with: the directory stays out of the way.
    nodeId: () => (storeDriver(config.fabric.store).shared && sandboxes.url ? sandboxes.nodeId : undefined),
    node: (id) => sandboxes.node(id),
    adapters: parts.registry,
    ttlMs: config.sessions.ttlSeconds * 1000,
    logger: parts.logger,
    // A memory workspace's files move with the session's state (a bucket's are every node's already).
    ...(parts.service.sessionFiles && parts.service.restoreSessionFiles
      ? {
          workspaces: {
            files: (id: string) => parts.service.sessionFiles!(id),
            restore: (id: string, files: readonly { path: string; content: Buffer }[]) => parts.service.restoreSessionFiles!(id, files),
          },
        }
      : {}),
  })
}

/**
 * The SandboxManager over the execution service and the adapters, from the `sandboxes` and `workspace` keys; files in
 * and out through the ledger when it is on. */
export function sandboxManagerFor(parts: FabricParts): SandboxManager {
  const { config } = parts
  const profiles = profilesFromConfig(config)
  const reach = forwardedSandboxes(config, () => manager.nodeId)
  const manager: SandboxManager = new SandboxManager({
    registry: parts.registry,
    execute: (request, options) => parts.service.execute(request, options),
    basePolicy: (profile) => {
      if (profile === undefined) return policyFromConfig(config)
      const found = profiles[profile]
      if (!found) throw new ExecgateError('EXECGATE_PROFILE_UNKNOWN', { name: profile, known: Object.keys(profiles).join(', ') || 'none' })
      return found
    },
    settings: config.sandboxes,
    limits: config.workspace,
    tierOrder: config.routing.tierOrder,
    // The driver's registry: shared by every node on a shared store, this process's own on the embedded one.
    sandboxRegistry: storeDriver(config.fabric.store).sandboxRegistry(config.fabric),
    // Other nodes' sandboxes through their HTTP API (find(), the MCP tools), as the tenant.
    reach,
    heartbeatMs: config.fabric.nodeHeartbeatMs,
    // By digest, the tenant's uploads first (the store's own tenant check), read only when within the file limit.
    uploads: {
      read: async (sha256, tenant) => {
        const found = await parts.uploads().locate(tenant, sha256)
        if (!found) return undefined
        if (found.bytes > config.workspace.maxFileBytes)
          throw new ExecgateError('EXECGATE_WORKSPACE_LIMIT', {
            detail:
              `the upload ${sha256} is ${found.bytes} bytes; a sandbox file may hold ` +
              `${config.workspace.maxFileBytes} (workspace.maxFileBytes)`,
          })
        return fs.promises.readFile(found.hostPath)
      },
      // For backends that bind an upload in (the process tier): no copy, so no file limit.
      locate: (sha256, tenant) => parts.uploads().locate(tenant, sha256),
    },
    // Files in and out through the ledger's own tenant check (the one GET /v1/artifacts/:sha256 answers with).
    ...(config.fabric.ledger.enabled
      ? {
          artifacts: {
            read: async (sha256, tenant) => (await parts.ledger.artifact(sha256, { tenant })).content,
            save: async (file) => (await parts.ledger.recordSandboxFile(file)).file,
          },
        }
      : {}),
    logger: parts.logger,
  })
  return manager
}
