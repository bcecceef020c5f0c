import { ExecgateError } from '../../core'
import { newRunId } from '../../execution/run-id'
import { findTaskProblem } from './task-schema'
import type { TaskStore } from './task-store'
import { DEFAULT_RETRY_POLICY, type Task, type TaskSpec, type TaskWorkspace, type WorkspaceAccess } from './task-types'

/** Who submits: the tenant owns the tasks (no other tenant sees them) and its profile runs them. */
export interface Submitter {
  tenant: string
  profile?: string
  /** Workspace access granted to the runs of these tasks (the plan engine's steps); see `Task.workspaceAccess`. */
  workspaceAccess?: WorkspaceAccess
  /** Where the runs of each of these tasks keep their workspace, by task id (the plan engine's bucket prefixes). */
  workspaceOf?: (taskId: string) => TaskWorkspace | undefined
  /**
   * The batch's ids are new by construction (a new plan's step task ids, made of the plan's id just made): not looked
   * up before the insert (which would still answer a task already stored under one in its place, never overwrite it).
   */
  ownIds?: boolean
}

const NOTHING_FOUND: ReadonlyMap<string, Task> = new Map()

/** Finds a dependency cycle among the batch's tasks (existing tasks cannot depend on new ones, so cycles lie in the batch). */
function findCycle(specs: ReadonlyMap<string, readonly string[]>): string[] | undefined {
  const state = new Map<string, 'visiting' | 'done'>()
  const trail: string[] = []
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done') return undefined
    if (state.get(id) === 'visiting') return [...trail.slice(trail.indexOf(id)), id]
    state.set(id, 'visiting')
    trail.push(id)
    for (const dependency of specs.get(id) ?? []) {
      if (!specs.has(dependency)) continue
      const cycle = visit(dependency)
      if (cycle) return cycle
    }
    trail.pop()
    state.set(id, 'done')
    return undefined
  }
  for (const id of specs.keys()) {
    const cycle = visit(id)
    if (cycle) return cycle
  }
  return undefined
}

/**
 * Checks a batch of task specs and turns them into PENDING tasks: each spec valid, ids unique and unused,
 * dependencies known (in the batch or the tenant's existing tasks) and acyclic. Throws EXECGATE_REQUEST_INVALID
 * naming the problem; nothing of a refused batch is stored.
 */
export async function prepareTasks(
  store: TaskStore,
  specs: readonly TaskSpec[],
  submitter: Submitter,
  now = Date.now(),
  /** The caller checked every spec against the schema already (findTaskProblem): not done twice. */
  schemaChecked = false,
): Promise<Task[]> {
  const invalid = (detail: string) => new ExecgateError('EXECGATE_REQUEST_INVALID', { detail })
  if (specs.length === 0) throw invalid('no task to submit')
  const ids = new Map<string, readonly string[]>()
  if (!schemaChecked)
    specs.forEach((spec, index) => {
      const problem = findTaskProblem(spec)
      if (problem) throw invalid(specs.length > 1 ? `tasks[${index}]: ${problem}` : problem)
    })
  // One task with a fresh id and no dependency (most submits): nothing to look up or cross-check in a batch.
  const only = specs.length === 1 ? specs[0]! : undefined
  if (only && only.id === undefined && !only.dependencies?.length)
    return [newTask({ ...only, id: newRunId(now) }, submitter, NOTHING_FOUND, new Date(now).toISOString())]
  // Time-ordered UUIDs (v7, as run ids): the SQLite store's id index and action-log index take each new task at
  // their end, not at a random page (a WAL frame and µs a task fewer, measured); 74 random bits keep them unguessable.
  const withIds = specs.map((spec) => ({ ...spec, id: spec.id ?? newRunId(now) }))
  for (const spec of withIds) {
    if (ids.has(spec.id)) throw invalid(`task id "${spec.id}" appears twice in the batch`)
    ids.set(spec.id, spec.dependencies ?? [])
  }
  // Only ids the caller chose can be taken: a fresh UUID is not looked up (a read saved per plain submit), nor ids the
  // submitter owns (ownIds).
  const chosen = submitter.ownIds ? [] : specs.flatMap((spec) => (spec.id ? [spec.id] : []))
  // Nothing to look up (most submits): no call, and no promise to wait on.
  const taken = chosen.length ? await store.getMany(chosen) : []
  // An idempotent resubmission may name its own earlier id; any other reuse of an id is refused.
  const reused = taken.find(
    (task) =>
      !withIds.some(
        (spec) =>
          spec.id === task.id && spec.idempotencyKey && spec.idempotencyKey === task.idempotencyKey && task.tenant === submitter.tenant,
      ),
  )
  if (reused) throw invalid(`task id "${reused.id}" is already taken`)
  const external = [...new Set(withIds.flatMap((spec) => spec.dependencies ?? []).filter((id) => !ids.has(id)))]
  const known = external.length ? await store.getMany(external) : []
  const found = new Map(known.filter((task) => task.tenant === submitter.tenant).map((task) => [task.id, task]))
  const unknown = external.filter((id) => !found.has(id))
  if (unknown.length > 0)
    throw invalid(`unknown dependency ${unknown.map((id) => `"${id}"`).join(', ')}: no such task for tenant ${submitter.tenant}`)
  const cycle = findCycle(ids)
  if (cycle) throw invalid(`dependency cycle: ${cycle.join(' -> ')}`)
  const at = new Date(now).toISOString()
  return withIds.map((spec) => newTask(spec, submitter, found, at))
}

/**
 * The PENDING task of a checked spec. Built field by field in one order, optional fields set only when present (the
 * stored JSON is the same): conditional spreads copied a temporary object each, and the whole made ~10 µs a submit.
 */
function newTask(spec: TaskSpec & { id: string }, submitter: Submitter, found: ReadonlyMap<string, Task>, at: string): Task {
  const dependencies = spec.dependencies?.length ? [...new Set(spec.dependencies)] : []
  const workspace = submitter.workspaceOf?.(spec.id)
  const task = { id: spec.id, tenant: submitter.tenant, state: 'PENDING', request: spec.request } as Task
  if (spec.intentId) task.intentId = spec.intentId
  task.priority = spec.priority ?? 0
  if (spec.deadline) task.deadline = new Date(spec.deadline).toISOString()
  task.requirements = spec.requirements ?? {}
  task.dependencies = dependencies
  if (spec.dependencyPaths) task.dependencyPaths = { ...spec.dependencyPaths }
  if (spec.timeoutMs) task.timeoutMs = spec.timeoutMs
  task.retryPolicy = { ...DEFAULT_RETRY_POLICY, retryOn: [...DEFAULT_RETRY_POLICY.retryOn], ...spec.retryPolicy }
  if (spec.idempotencyKey) task.idempotencyKey = spec.idempotencyKey
  task.lane = spec.lane ?? 'batch'
  task.attempts = 0
  task.ready = dependencies.every((id) => found.get(id)?.state === 'COMPLETED')
  task.notBefore = 0
  task.reason = 'submitted'
  if (submitter.profile) task.profile = submitter.profile
  if (submitter.workspaceAccess) task.workspaceAccess = submitter.workspaceAccess
  if (workspace) task.workspace = { ...workspace }
  if (spec.provenance) task.provenance = { ...spec.provenance }
  task.createdAt = at
  task.updatedAt = at
  return task
}

/**
 * The first of a batch's tasks in the due order (priority, then submission) that is due at submission: the one its
 * insert may start (TaskStore.insertAndStart), if any.
 */
export function firstDue(tasks: readonly Task[]): Task | undefined {
  const now = Date.now()
  let first: Task | undefined
  for (const task of tasks)
    if (task.ready && task.state === 'PENDING' && task.notBefore <= now && (!first || task.priority > first.priority)) first = task
  return first
}

/** A run with no dependency outputs to read and no workspace to open: it can be stored and started in one write. */
export function needsNoPreparation(task: Task): boolean {
  return task.dependencies.length === 0 && !task.workspace
}
