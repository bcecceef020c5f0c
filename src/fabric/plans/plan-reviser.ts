import type { Task } from '../tasks'
import { planRules } from './new-plan'
import type { PlanEngineOptions } from './plan-engine-options'
import type { PlanLooks } from './plan-looks'
import { currentVersion, decideRevision, revisionContext } from './plan-revision'
import { ENGINE_REASON_PREFIX, failureOf } from './plan-steps'
import type { Plan, PlanVersion } from './plan-types'
import type { PlanWriter } from './plan-writer'
import { submitVersionTasks } from './version-tasks'

/**
 * The fix-plan loop of a plan paused on a failed step (REVISING, owned by this engine): asks the reflector, decides on
 * its reply (plan-revision.ts), and records either a refused reply or the accepted revision as the next version, whose
 * new steps it submits; a plan out of revisions (or without a reflector) fails saying why. A question in flight is
 * abandoned when the plan is cancelled or the engine stops: a restart asks again.
 */
export class PlanReviser {
  /** The question in flight for each plan revised here, aborted by a cancel or a stop. */
  private readonly revising = new Map<string, AbortController>()
  /** Plans being cancelled here: no reflector is asked for them from now on. */
  private readonly beingCancelled = new Set<string>()

  constructor(
    private readonly options: PlanEngineOptions,
    private readonly writer: PlanWriter,
    private readonly looks: PlanLooks,
    private readonly engine: { stopped(): boolean; kick(id: string): void },
  ) {}

  /** The plan is being cancelled: its question in flight is abandoned, and no other is asked until `cancelled`. */
  cancelling(id: string, reason: Error): void {
    this.beingCancelled.add(id)
    this.revising.get(id)?.abort(reason)
  }

  /** The cancel of the plan is over (ended, or found ended). */
  cancelled(id: string): void {
    this.beingCancelled.delete(id)
  }

  /** Abandons every question in flight (the engine is stopping). */
  abortAll(reason: Error): void {
    for (const controller of this.revising.values()) controller.abort(reason)
  }

  /** The fix-plan loop for one failure: ask, decide, record; until a revision is accepted or none is left. */
  async revise(plan: Plan, tasks: Map<string, Task>): Promise<void> {
    const failedTask = tasks.get(currentVersion(plan).steps.find((step) => step.id === plan.failedStep)!.taskId)!
    const error = `step ${plan.failedStep} failed: ${failureOf(failedTask)}`
    const { reflector } = this.options
    if (!reflector)
      return void (await this.writer.finish(
        plan,
        'FAILED',
        `${error}; no reflector is configured (fabric.plans.reflector.modelId), so the plan was not revised`,
      ))
    while (plan.revisions.length < plan.maxRevisions && !this.beingCancelled.has(plan.id)) {
      const controller = new AbortController()
      this.revising.set(plan.id, controller)
      const reply = await reflector
        .revise(revisionContext(plan, tasks, this.options.settings.allowedImports), controller.signal)
        .finally(() => this.revising.delete(plan.id))
      // Cancelled, or this process is stopping: a restart asks again (an unanswered question is not counted).
      if (controller.signal.aborted || this.engine.stopped() || this.beingCancelled.has(plan.id)) return
      const completed = await this.completedTasks(plan)
      const decision =
        reply.problem !== undefined ? { problem: reply.problem } : decideRevision(planRules(this.options), plan, reply.steps, completed)
      const attempt = plan.revisions.length + 1
      const at = new Date().toISOString()
      if (decision.problem !== undefined) {
        const refused = { attempt, at, stepId: plan.failedStep!, accepted: false, reason: decision.problem }
        const next = await this.writer.write(plan, { revisions: [...plan.revisions, refused] }, [
          { type: 'revision', at, version: plan.version, attempt, accepted: false, stepId: refused.stepId, reason: refused.reason },
        ])
        if (!next) return this.engine.kick(plan.id)
        plan = next
        continue
      }
      // What stays of the old version ends here (a suspended step is revised, not resumed).
      for (const task of tasks.values())
        if (task.state === 'SUSPENDED')
          await this.options.tasks.scheduler.cancel(task.id, `${ENGINE_REASON_PREFIX}${plan.id} revised to version ${plan.version + 1}`)
      await this.writer.mirror(plan, await this.looks.tasksOf(plan))
      const note = (reply.problem === undefined ? reply.note : undefined) ?? 'revised by the reflector'
      const version: PlanVersion = {
        version: plan.version + 1,
        createdAt: at,
        reason: `revision ${attempt}: ${error}`,
        note,
        steps: decision.records,
        changes: decision.changes,
      }
      const reason = `revised to version ${version.version} after ${error}`
      const next = await this.writer.write(
        plan,
        {
          state: 'RUNNING',
          reason,
          version: version.version,
          versions: [...plan.versions, version],
          revisions: [...plan.revisions, { attempt, at, stepId: plan.failedStep!, accepted: true, version: version.version, reason: note }],
          failedStep: undefined,
          owner: undefined,
        },
        [
          {
            type: 'revision',
            at,
            version: version.version,
            attempt,
            accepted: true,
            stepId: plan.failedStep!,
            reason: note,
            changes: decision.changes,
          },
          { type: 'plan', at, version: version.version, from: 'REVISING', to: 'RUNNING', reason },
        ],
      )
      if (!next) return this.engine.kick(plan.id)
      await submitVersionTasks(this.options, next)
      return this.engine.kick(plan.id)
    }
    if (this.beingCancelled.has(plan.id)) return
    const last = plan.revisions.at(-1)
    const refusedLast = last && !last.accepted ? `; the last reply was refused: ${last.reason}` : ''
    await this.writer.finish(
      plan,
      'FAILED',
      `${error}; no revision left (${plan.revisions.length} of ${plan.maxRevisions} used${refusedLast})`,
    )
  }

  /** Every completed task of the plan's versions: runs a revision may keep. */
  private async completedTasks(plan: Plan): Promise<Map<string, Task>> {
    const ids = [...new Set(plan.versions.flatMap((version) => version.steps.map((step) => step.taskId)))]
    return new Map((await this.options.taskStore.getMany(ids)).filter((task) => task.state === 'COMPLETED').map((task) => [task.id, task]))
  }
}
