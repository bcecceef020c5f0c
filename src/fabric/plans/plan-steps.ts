import { createHash } from 'node:crypto'
import type { ExecutionRequest } from '../../core'
import type { Task, TaskSpec } from '../tasks'
import type { Plan, PlanChanges, PlanStepRecord, PlanStepSpec, PlanStepView, PlanVersion } from './plan-types'

/**
 * How a plan's steps become tasks, and which runs a revision keeps: pure functions over plans and tasks, so the
 * engine's decisions can be read (and tested) apart from its I/O.
 */

/** Where a step finds what a step it depends on produced: `steps/<stepId>/value.json`, `steps/<stepId>/files/<path>`. */
export const STEP_INPUT_ROOT = 'steps'

/** Reasons the engine gives the tasks it ends itself start with this, so their end is never read as the step's failure. */
export const ENGINE_REASON_PREFIX = 'plan '

/** Where a step's workspace lives in the bucket for a plan whose workspace is `s3`, under `<fabric.s3.prefix>workspaces/`. */
export function stepWorkspacePrefix(planId: string, stepId: string, version: number): string {
  return `plans/${planId}/${stepId}/v${version}/`
}

/** The task a step runs as in a version: one task per step and version, so a revision never reuses an id. */
export function taskIdFor(planId: string, stepId: string, version: number): string {
  return `plan.${planId}.${stepId}.v${version}`
}

/**
 * SHA-256 of what decides a step's outcome (language, code, dependencies, limits, the uploads it reads); the
 * description does not count. A step without files hashes as it did before steps could name any.
 */
export function stepDigest(step: PlanStepSpec): string {
  const limits = Object.fromEntries(Object.entries(step.limits ?? {}).sort(([a], [b]) => a.localeCompare(b)))
  const files = [...(step.files ?? [])]
    .map((file) => [file.path, file.sha256.replace(/^sha256:/, '')])
    .sort(([a], [b]) => a!.localeCompare(b!))
  const canonical = JSON.stringify([
    step.language,
    step.code,
    [...new Set(step.dependsOn ?? [])].sort(),
    limits,
    ...(files.length ? [files] : []),
  ])
  return createHash('sha256').update(canonical).digest('hex')
}

/** The steps in an order where every step comes after the steps it depends on (the graph is known to be acyclic). */
export function dependencyOrder<T extends Pick<PlanStepSpec, 'id' | 'dependsOn'>>(steps: readonly T[]): T[] {
  const byId = new Map(steps.map((step) => [step.id, step]))
  const ordered: T[] = []
  const seen = new Set<string>()
  const visit = (step: T) => {
    if (seen.has(step.id)) return
    seen.add(step.id)
    for (const id of step.dependsOn ?? []) if (byId.has(id)) visit(byId.get(id)!)
    ordered.push(step)
  }
  steps.forEach(visit)
  return ordered
}

/** Copies only the fields of a step spec (a reply or a stored record may carry more). */
export function specOf(step: PlanStepSpec): PlanStepSpec {
  return {
    id: step.id,
    ...(step.description !== undefined ? { description: step.description } : {}),
    language: step.language,
    code: step.code,
    ...(step.dependsOn?.length ? { dependsOn: [...new Set(step.dependsOn)] } : {}),
    ...(step.files?.length ? { files: step.files.map((file) => ({ path: file.path, sha256: file.sha256 })) } : {}),
    ...(step.limits && Object.keys(step.limits).length ? { limits: { ...step.limits } } : {}),
  }
}

/** The execution request of a step: its code, with its limits as the request's (which may only tighten the policy). */
export function requestFor(step: PlanStepSpec): ExecutionRequest {
  const { timeoutMs, memoryMb, outputBytes } = step.limits ?? {}
  return {
    language: step.language,
    code: step.code,
    ...(step.files?.length ? { files: step.files.map((file) => ({ path: file.path, sha256: file.sha256.replace(/^sha256:/, '') })) } : {}),
    ...(timeoutMs ? { timeoutMs } : {}),
    ...(memoryMb ? { memoryMb } : {}),
    ...(outputBytes ? { policy: { outputBytes } } : {}),
  }
}

/**
 * The records of a new version: each step keeps an earlier completed run when its definition is the same and its
 * dependencies are the very runs it read then (so its inputs are the same); otherwise it gets a task of this version.
 * `completed` holds the tasks of earlier versions that completed.
 */
export function recordsFor(
  plan: Pick<Plan, 'id' | 'versions'>,
  steps: readonly PlanStepSpec[],
  version: number,
  completed: ReadonlyMap<string, Task>,
): PlanStepRecord[] {
  const records = new Map<string, PlanStepRecord>()
  for (const step of dependencyOrder(steps.map(specOf))) {
    const digest = stepDigest(step)
    const inputs = (step.dependsOn ?? []).map((id) => records.get(id)!.taskId)
    let kept: PlanStepRecord | undefined
    for (const earlier of [...plan.versions].reverse()) {
      const candidate = earlier.steps.find((record) => record.id === step.id)
      if (!candidate || candidate.digest !== digest || !completed.has(candidate.taskId)) continue
      const earlierInputs = (candidate.dependsOn ?? []).map((id) => earlier.steps.find((record) => record.id === id)?.taskId)
      if (earlierInputs.length === inputs.length && earlierInputs.every((taskId, index) => taskId === inputs[index])) {
        kept = { ...step, taskId: candidate.taskId, digest, reusedFrom: candidate.reusedFrom ?? earlier.version }
        break
      }
    }
    records.set(step.id, kept ?? { ...step, taskId: taskIdFor(plan.id, step.id, version), digest })
  }
  // In the order given (the author's), not the dependency order used to resolve inputs.
  return steps.map((step) => records.get(step.id)!)
}

/** The task of one step of a version, reading its dependencies under `steps/<stepId>/`, carrying its provenance. */
export function taskSpecFor(plan: Pick<Plan, 'id' | 'priority' | 'lane'>, version: PlanVersion, record: PlanStepRecord): TaskSpec {
  const byId = new Map(version.steps.map((step) => [step.id, step]))
  const dependencies = (record.dependsOn ?? []).map((id) => byId.get(id)!.taskId)
  return {
    id: record.taskId,
    request: requestFor(record),
    priority: plan.priority,
    lane: plan.lane,
    ...(dependencies.length
      ? {
          dependencies,
          dependencyPaths: Object.fromEntries((record.dependsOn ?? []).map((id) => [byId.get(id)!.taskId, `${STEP_INPUT_ROOT}/${id}`])),
        }
      : {}),
    ...(record.limits?.maxAttempts ? { retryPolicy: { maxAttempts: record.limits.maxAttempts } } : {}),
    provenance: { planId: plan.id, planVersion: version.version, stepId: record.id },
  }
}

/** What changed from one version to the next, by step id. */
export function changesBetween(previous: PlanVersion, next: readonly PlanStepRecord[]): PlanChanges {
  const before = new Map(previous.steps.map((step) => [step.id, step]))
  const after = new Set(next.map((step) => step.id))
  return {
    added: next.filter((step) => !before.has(step.id)).map((step) => step.id),
    removed: previous.steps.filter((step) => !after.has(step.id)).map((step) => step.id),
    changed: next.filter((step) => before.has(step.id) && before.get(step.id)!.digest !== step.digest).map((step) => step.id),
    reused: next.filter((step) => step.reusedFrom !== undefined).map((step) => step.id),
  }
}

/**
 * Why a step's task counts as the step failing, or undefined when it does not: FAILED (after its own retries),
 * SUSPENDED (resource exhaustion: in a plan the reflector decides, not a person), or TERMINATED by its own run
 * (timeout, policy violation, a deadline, a caller's cancel). A task ended by its failed dependency or by the engine
 * itself, or suspended because its plan was, is not a failure of its own: the root failure is what gets revised.
 */
export function failureOf(task: Task): string | undefined {
  if (task.state === 'FAILED') return task.reason
  if (task.state !== 'TERMINATED' && task.state !== 'SUSPENDED') return undefined
  if (task.reason.startsWith(ENGINE_REASON_PREFIX) || task.reason.startsWith('dependency ')) return undefined
  return task.reason
}

/** The steps of a version with their tasks' states; a step whose task is not stored yet shows PENDING. */
export function stepViews(version: PlanVersion, tasks: ReadonlyMap<string, Task>): PlanStepView[] {
  return version.steps.map((record) => {
    const task = tasks.get(record.taskId)
    return {
      ...record,
      state: task?.state ?? 'PENDING',
      attempts: task?.attempts ?? 0,
      reason: task?.reason ?? 'not submitted yet',
      ...(task?.result ? { result: task.result } : {}),
    }
  })
}
