import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ExecgateError } from '../core'
import { PLAN_STATES, type PlanSpec, type PlanState } from '../fabric/plans'
import { type ResumeChanges, type TaskCaller } from '../fabric/tasks'
import type { Execgate } from '../index'

/**
 * Plans over HTTP (docs/plans.md). Every route is the calling tenant's: another tenant's plan answers 404, exactly
 * like a missing one, and a plan's steps run under the tenant's policy profile.
 */

const callerOf = (request: FastifyRequest): TaskCaller => ({
  tenant: request.tenant.name,
  ...(request.tenant.profile ? { profile: request.tenant.profile } : {}),
})
const idOf = (request: FastifyRequest) => (request.params as { id: string }).id
const notFound = (request: FastifyRequest) =>
  new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no plan "${idOf(request)}" for tenant ${request.tenant.name}` })

export function registerPlanRoutes(app: FastifyInstance, execgate: Execgate): void {
  app.post('/v1/plans', async (request, reply) => {
    const body = request.body as PlanSpec | undefined
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'the body must be a plan object' })
    const plan = await execgate.plans.run(body, callerOf(request))
    return reply
      .code(201)
      .header('location', `/v1/plans/${encodeURIComponent(plan.id)}`)
      .send(plan)
  })

  app.get('/v1/plans', async (request) => {
    const query = request.query as { state?: string; limit?: string; cursor?: string; order?: string }
    if (query.order !== undefined && query.order !== 'oldest' && query.order !== 'newest')
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'order must be oldest or newest' })
    if (query.state !== undefined && !(PLAN_STATES as readonly string[]).includes(query.state)) {
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `state must be one of: ${PLAN_STATES.join(', ')}` })
    }
    const limit = query.limit === undefined ? undefined : Number(query.limit)
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 500))
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'limit must be a whole number from 1 to 500' })
    return execgate.plans.list(
      {
        ...(query.state ? { state: query.state as PlanState } : {}),
        ...(limit ? { limit } : {}),
        ...(query.cursor ? { cursor: query.cursor } : {}),
        ...(query.order ? { order: query.order as 'oldest' | 'newest' } : {}),
      },
      callerOf(request),
    )
  })

  app.get(
    '/v1/plans/:id',
    async (request) => (await execgate.plans.get(idOf(request), callerOf(request))) ?? Promise.reject(notFound(request)),
  )

  app.delete('/v1/plans/:id', async (request) => execgate.plans.cancel(idOf(request), callerOf(request)))
  app.post('/v1/plans/:id/suspend', async (request) => execgate.plans.suspend(idOf(request), callerOf(request)))
  app.post('/v1/plans/:id/resume', async (request) => {
    const body = (request.body ?? {}) as ResumeChanges
    // The changes go to the steps the plan held, each checked against the tenant's profile as a task's resume is.
    return execgate.plans.resume(idOf(request), body, callerOf(request))
  })

  // Server-sent events: the plan's log in order (`event: plan`, `step` or `revision`, its `seq` as the event id),
  // then live, until the plan ends; `event: output` for each rich output of a step (one another node runs too, on
  // Redis). `Last-Event-ID` resumes after an event already seen.
  app.get('/v1/plans/:id/events', async (request, reply) => {
    const caller = callerOf(request)
    if (!(await execgate.plans.get(idOf(request), caller))) throw notFound(request)
    const lastSeen = Number(request.headers['last-event-id'] ?? 0) || 0
    reply.hijack()
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
    const events = execgate.plans.events(idOf(request), { ...caller, afterSeq: lastSeen })
    reply.raw.on('close', () => void events.return(undefined))
    // A step's rich output is not in the log: it carries no id, so Last-Event-ID never counts it.
    for await (const event of events)
      reply.raw.write(`${'seq' in event ? `id: ${event.seq}\n` : ''}event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
    reply.raw.end()
  })
}
