import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ExecgateError } from '../core'
import { TASK_STATES, type ResumeChanges, type TaskCaller, type TaskSpec, type TaskState } from '../fabric/tasks'
import type { Execgate } from '../index'

/**
 * Durable tasks over HTTP (docs/tasks.md). Every route is the calling tenant's: another tenant's task answers 404,
 * exactly like a missing one, and a task runs under the tenant's policy profile.
 */

const callerOf = (request: FastifyRequest): TaskCaller => ({
  tenant: request.tenant.name,
  ...(request.tenant.profile ? { profile: request.tenant.profile } : {}),
})
const idOf = (request: FastifyRequest) => (request.params as { id: string }).id

export function registerTaskRoutes(app: FastifyInstance, execgate: Execgate): void {
  app.post('/v1/tasks', async (request, reply) => {
    const body = request.body as TaskSpec | undefined
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'the body must be a task object' })
    // The Idempotency-Key header is the usual HTTP way to say the same thing as the body's idempotencyKey.
    const header = request.headers['idempotency-key']
    const spec: TaskSpec = typeof header === 'string' && header && !body.idempotencyKey ? { ...body, idempotencyKey: header } : body
    const task = await execgate.tasks.submit(spec, callerOf(request))
    return reply
      .code(201)
      .header('location', `/v1/tasks/${encodeURIComponent(task.id)}`)
      .send(task)
  })

  app.get('/v1/tasks', async (request) => {
    const query = request.query as { state?: string; intentId?: string; limit?: string; cursor?: string; order?: string }
    if (query.order !== undefined && query.order !== 'oldest' && query.order !== 'newest')
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'order must be oldest or newest' })
    if (query.state !== undefined && !(TASK_STATES as readonly string[]).includes(query.state)) {
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `state must be one of: ${TASK_STATES.join(', ')}` })
    }
    const limit = query.limit === undefined ? undefined : Number(query.limit)
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 500))
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'limit must be a whole number from 1 to 500' })
    return execgate.tasks.list(
      {
        ...(query.state ? { state: query.state as TaskState } : {}),
        ...(query.intentId ? { intentId: query.intentId } : {}),
        ...(limit ? { limit } : {}),
        ...(query.cursor ? { cursor: query.cursor } : {}),
        ...(query.order ? { order: query.order } : {}),
      },
      callerOf(request),
    )
  })

  app.get('/v1/tasks/:id', async (request) => {
    const task = await execgate.tasks.get(idOf(request), callerOf(request))
    if (!task) throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no task "${idOf(request)}" for tenant ${request.tenant.name}` })
    return task
  })

  app.delete('/v1/tasks/:id', async (request) => execgate.tasks.cancel(idOf(request), callerOf(request)))
  app.post('/v1/tasks/:id/suspend', async (request) => execgate.tasks.suspend(idOf(request), callerOf(request)))
  app.post('/v1/tasks/:id/resume', async (request) => {
    const body = (request.body ?? {}) as ResumeChanges
    return execgate.tasks.resume(idOf(request), body, callerOf(request))
  })

  // Server-sent events: each transition (`event: transition`), output while the task runs on this server
  // (`event: stdout` / `stderr`), and `event: output` for each rich output, as on POST /v1/executions/stream (of a
  // run on another node too, on the Redis store), until the task ends. `Last-Event-ID` resumes after a transition already seen.
  app.get('/v1/tasks/:id/events', async (request, reply) => {
    const caller = callerOf(request)
    if (!(await execgate.tasks.get(idOf(request), caller)))
      throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no task "${idOf(request)}" for tenant ${request.tenant.name}` })
    const lastSeen = Number(request.headers['last-event-id'] ?? 0) || 0
    reply.hijack()
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
    const events = execgate.tasks.events(idOf(request), { ...caller, afterSeq: lastSeen })
    reply.raw.on('close', () => void events.return(undefined))
    for await (const item of events) {
      if (item.type === 'transition') reply.raw.write(`id: ${item.event.seq}\nevent: transition\ndata: ${JSON.stringify(item.event)}\n\n`)
      else if (item.type === 'rich-output')
        reply.raw.write(`event: output\ndata: ${JSON.stringify({ index: item.index, attempt: item.attempt, output: item.output })}\n\n`)
      else reply.raw.write(`event: ${item.stream}\ndata: ${JSON.stringify({ chunk: item.chunk })}\n\n`)
    }
    reply.raw.end()
  })
}
