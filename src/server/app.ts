import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import {
  ExecgateError,
  EXECUTION_REQUEST_SCHEMA,
  LANGUAGES,
  describeError,
  type ErrorCode,
  type ExecutionListener,
  type ExecutionRequest,
} from '../core'
import { findRequestProblem } from '../execution/parse-request'
import type { Execgate } from '../index'
import type { Logger } from '../observability/logger'
import * as tokens from '../app/tokens'
import { registerTaskRoutes } from './task-routes'
import { registerObservationRoutes } from './observation-routes'
import { registerConsoleAssets } from './console-assets'
import { registerLedgerRoutes } from './ledger-routes'
import { registerPlanRoutes } from './plan-routes'
import { registerSandboxRoutes } from './sandbox-routes'
import { registerSessionForwarding } from './session-forwarding'
import { registerPolicyRoutes } from './policy-routes'
import { registerFileRoutes } from './file-routes'
import { ServerMetrics } from './metrics'
import { openApiDocument } from './openapi'
import { ANONYMOUS, RateLimiter, tenantsByKey, type Tenant } from './tenants'
import { outputEvents } from './output-events'
import { retryAfterSeconds } from './retry-after'

export interface ServerOptions {
  execgate: Execgate
  logger: Logger
  /** Tenants by API key; empty means an open server (which must bind loopback only). */
  tenants: ReadonlyMap<string, Tenant>
  bodyLimitBytes: number
}

const HTTP_STATUS: Partial<Record<ErrorCode, number>> = {
  EXECGATE_REQUEST_INVALID: 400,
  EXECGATE_UNAUTHORIZED: 401,
  EXECGATE_FORBIDDEN: 403,
  EXECGATE_NOT_FOUND: 404,
  EXECGATE_TASK_CONFLICT: 409,
  EXECGATE_PLAN_CONFLICT: 409,
  EXECGATE_SUBMIT_REFUSED: 400,
  EXECGATE_RESUME_REFUSED: 400,
  EXECGATE_BODY_TOO_LARGE: 413,
  EXECGATE_RATE_LIMITED: 429,
  EXECGATE_SHUTTING_DOWN: 503,
  EXECGATE_LEDGER_UNAVAILABLE: 503,
  EXECGATE_LEDGER_DISABLED: 501,
  EXECGATE_SANDBOX_LIMIT: 429,
  EXECGATE_SANDBOX_STOPPED: 404,
  EXECGATE_SANDBOX_LOST: 410,
  EXECGATE_SANDBOX_ELSEWHERE: 502,
  EXECGATE_SESSION_ELSEWHERE: 502,
  EXECGATE_SNAPSHOT_CORRUPT: 502,
  EXECGATE_WORKSPACE_NOT_FOUND: 404,
  EXECGATE_ADAPTER_UNAVAILABLE: 503,
  EXECGATE_DEPENDENCY_MISSING: 501,
  EXECGATE_FILE_NOT_FOUND: 404,
  EXECGATE_FILE_QUOTA: 413,
}

/** Admission refusals worth retrying, answered with this HTTP status and `Retry-After` instead of a 200 result. */
const ADMISSION_REFUSAL_STATUS: Partial<Record<ErrorCode, number>> = {
  EXECGATE_QUEUE_FULL: 429,
  EXECGATE_QUOTA_EXCEEDED: 429,
  EXECGATE_SHUTTING_DOWN: 503,
}

/**
 * Many HTTP clients send `content-type: application/json` on every call, bodiless ones too (DELETE a sandbox, POST a
 * cancel). Fastify's JSON parser answers those 400 ("Body cannot be empty"); here an empty body is no body, and any
 * other is parsed by Fastify's own parser (prototype poisoning refused, as by default).
 */
function acceptEmptyJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') {
      done(null, undefined)
      return
    }
    void parseJson(request, body.toString(), done)
  })
}

/** One error body for every route: `{ error: { code, message } }`, never a stack. */
function sendError(reply: FastifyReply, error: ExecgateError): FastifyReply {
  return reply
    .code(HTTP_STATUS[error.code] ?? (error.fault === 'client' ? 400 : 500))
    .send({ error: { code: error.code, message: error.message } })
}

/** `traceparent: 00-<32 hex trace id>-<16 hex span id>-<flags>` → the trace id. */
export function traceIdFrom(header: unknown): string | undefined {
  const match = typeof header === 'string' ? /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/.exec(header.trim()) : null
  return match && !/^0+$/.test(match[1]!) ? match[1] : undefined
}

/** A session id as the adapters see it: prefixed with the tenant, so tenants can never reach each other's. */
export function tenantSession(tenant: Tenant, sessionId: string): string {
  return `${tenant.name}:${sessionId}`
}

declare module 'fastify' {
  interface FastifyRequest {
    tenant: Tenant
  }
}

/** The HTTP API (docs/api.md). Routes under /v1 and /mcp need a key when keys are configured. */
export function buildServer(options: ServerOptions): { app: FastifyInstance; metrics: ServerMetrics; beginShutdown(): void } {
  const { execgate, logger, tenants } = options
  const app = Fastify({ logger: false, bodyLimit: options.bodyLimitBytes, return503OnClosing: false })
  acceptEmptyJsonBodies(app)
  const metrics = new ServerMetrics(execgate)
  // Every execution of this execgate (HTTP, MCP, the library) is counted, through the container's listeners.
  const metricsBinding = execgate.container.bind<ExecutionListener>(tokens.ExecutionListener).toConstantValue(metrics).getIdentifier()
  app.addHook('onClose', async () => execgate.container.unbind(metricsBinding))
  const limiter = new RateLimiter()
  let closing = false
  app.decorateRequest('tenant', null as never)
  app.addHook('onRequest', async (request) => {
    request.tenant = ANONYMOUS
  })

  app.setErrorHandler((error: Error & { code?: string; statusCode?: number }, _request, reply) => {
    if (error instanceof ExecgateError) return sendError(reply, error)
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
      return sendError(reply, new ExecgateError('EXECGATE_BODY_TOO_LARGE', { limit: options.bodyLimitBytes }))
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      return sendError(
        reply,
        new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'the body must be JSON (Content-Type: application/json)' }),
      )
    if (error.statusCode && error.statusCode < 500)
      return sendError(reply, new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: error.message.replace(/^Body /, 'the body ') }))
    logger.error({ err: describeError(error) }, 'request failed')
    return sendError(reply, new ExecgateError('EXECGATE_INTERNAL', { detail: 'the server failed; the log has the cause' }))
  })
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no route ${request.method} ${request.url.split('?')[0]}` })),
  )

  // Authentication and rate limits for the API and MCP routes; health, readiness, metrics and docs stay open.
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const url = request.url.split('?')[0]!
    if (!url.startsWith('/v1/') && url !== '/mcp') return
    if (closing && request.method !== 'GET') {
      metrics.recordRejected('shutting_down')
      return sendError(reply, new ExecgateError('EXECGATE_SHUTTING_DOWN'))
    }
    if (tenants.size > 0) {
      const header = request.headers.authorization
      const key = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7).trim() : undefined
      const tenant = key ? tenants.get(key) : undefined
      if (!tenant) {
        metrics.recordRejected(key ? 'bad_key' : 'no_key')
        return sendError(
          reply,
          new ExecgateError('EXECGATE_UNAUTHORIZED', {
            detail: key ? 'the API key is not valid' : 'an API key is required: Authorization: Bearer <key>',
          }),
        )
      }
      request.tenant = tenant
    }
    const retryAfter = limiter.take(request.tenant)
    if (retryAfter > 0) {
      metrics.recordRejected('rate_limit')
      reply.header('Retry-After', String(retryAfter))
      return sendError(
        reply,
        new ExecgateError('EXECGATE_RATE_LIMITED', { limit: request.tenant.ratePerMinute, tenant: request.tenant.name, retryAfter }),
      )
    }
  })

  /** The profile a request runs under: the header's, if the tenant may use it, else the tenant's own. */
  const profileFor = (request: FastifyRequest): string | undefined => {
    const asked = request.headers['x-execgate-profile']
    if (typeof asked !== 'string' || !asked) return request.tenant.profile
    if (tenants.size > 0 && !request.tenant.profiles.includes(asked)) {
      metrics.recordRejected('forbidden_profile')
      throw new ExecgateError('EXECGATE_FORBIDDEN', {
        detail:
          `tenant ${request.tenant.name} may not use the policy profile "${asked}" (allowed: ` +
          `${request.tenant.profiles.join(', ') || 'none'})`,
      })
    }
    return asked
  }

  app.post('/v1/executions', async (request, reply) => {
    const problem = findRequestProblem(request.body)
    if (problem) {
      metrics.recordRejected('invalid_request')
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: problem })
    }
    const body = request.body as ExecutionRequest
    // Every log line of one execution carries its traceId: the caller's, the traceparent's, or a new one.
    const traceId = body.traceId ?? traceIdFrom(request.headers.traceparent) ?? randomUUID()
    // Sessions are the tenant's own: the same id from another tenant names a different session.
    const executionRequest: ExecutionRequest = {
      ...body,
      traceId,
      ...(body.sessionId ? { sessionId: tenantSession(request.tenant, body.sessionId) } : {}),
    }
    const profile = profileFor(request)
    const log = logger.child({ traceId, tenant: request.tenant.name })
    log.info({ language: body.language, adapter: body.adapter, codeBytes: Buffer.byteLength(body.code) }, 'execution received')
    // The caller going away cancels the run.
    const controller = new AbortController()
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) controller.abort()
    })
    const streaming = (request.headers.accept ?? '').includes('text/event-stream')
    const tenant = request.tenant.name
    if (!streaming) {
      // Metrics and the 'execution finished' log line come from the container's execution listeners.
      const result = await execgate.execute(executionRequest, { signal: controller.signal, profile, tenant })
      const refusedWith = result.error?.code ? ADMISSION_REFUSAL_STATUS[result.error.code as ErrorCode] : undefined
      if (refusedWith && result.status === 'unavailable') {
        reply.header('Retry-After', retryAfterSeconds(result.retryAfterMs))
        return reply.code(refusedWith).send({
          error: { code: result.error!.code, message: result.message },
          traceId: result.traceId,
          retryAfterMs: result.retryAfterMs,
        })
      }
      // A run that never started for a passing reason (pyodide still warming: EXECGATE_INTERPRETER_WAIT) stays a 200
      // result; its retryAfterMs becomes the same header, so plain HTTP clients know when to try again.
      if (result.retryAfterMs !== undefined) reply.header('Retry-After', retryAfterSeconds(result.retryAfterMs))
      return result
    }
    reply.hijack()
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
    const send = (event: string, data: unknown) => reply.raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
    const outputs = outputEvents(send)
    const result = await execgate.execute(executionRequest, {
      signal: controller.signal,
      profile,
      tenant,
      onOutput: (stream, chunk) => send(stream, { chunk }),
      onRichOutput: outputs.onRichOutput,
    })
    outputs.rest(result)
    send('result', result)
    reply.raw.end()
  })

  app.post('/v1/validate', async (request) => {
    const body = request.body as { code?: unknown; language?: unknown; adapter?: unknown } | undefined
    if (!body || typeof body.code !== 'string' || !body.code)
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'code is required (a non-empty string)' })
    if (!(LANGUAGES as readonly unknown[]).includes(body.language))
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `language must be one of: ${LANGUAGES.join(', ')}` })
    if (body.adapter !== undefined && typeof body.adapter !== 'string')
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'adapter must be a string' })
    return execgate.validate(body.code, body.language as ExecutionRequest['language'], body.adapter as string | undefined)
  })

  app.get('/v1/languages', async () => ({ languages: execgate.languages() }))
  // Every node of the fabric beside this one's own status: their heartbeats in the sandbox registry (docs/sandboxes.md#many-nodes).
  app.get('/v1/adapters', async () => ({ ...execgate.status(), node: execgate.sandboxes.nodeId, nodes: await execgate.sandboxes.nodes() }))
  app.delete('/v1/sessions/:id', async (request, reply) => {
    const id = (request.params as { id: string }).id
    if (await execgate.closeSession(tenantSession(request.tenant, id))) return reply.code(204).send()
    throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no session "${id}" for tenant ${request.tenant.name}` })
  })

  // Before the routes run: a session held by another node is forwarded there (docs/sandboxes.md#sessions-across-nodes).
  registerSessionForwarding(app, execgate, (request, sessionId) => tenantSession(request.tenant, sessionId))
  registerTaskRoutes(app, execgate)
  registerObservationRoutes(app, execgate, { tenants })
  registerConsoleAssets(app)
  registerLedgerRoutes(app, execgate)
  registerPlanRoutes(app, execgate)
  registerSandboxRoutes(app, execgate)
  registerPolicyRoutes(app, execgate, { tenants })
  registerFileRoutes(app, execgate)

  app.get('/healthz', async () => ({ status: 'up' }))
  app.get('/readyz', async (_request, reply) => {
    // Not ready while the embedded adapters warm up: a load balancer sends no request that would pay a cold start.
    if (!execgate.status().warmedUp) return reply.code(503).send({ ready: false, warming: true, available: [] })
    let status = execgate.status()
    if (status.adapters.every((adapter) => adapter.health.state === 'unknown')) {
      // No health check has finished yet (the slowest, a sandbox spawn on a busy host, can take seconds). An adapter
      // that has just warmed up has run code: it answers for itself until the monitor's first round lands.
      const warm = status.adapters.filter((adapter) => adapter.warm === true).map((adapter) => adapter.name)
      if (warm.length > 0) return reply.code(closing ? 503 : 200).send({ ready: !closing, available: warm })
      status = await execgate.checkNow()
    }
    const ready = status.adapters
      .filter((adapter) => adapter.health.state === 'available' || adapter.health.state === 'degraded')
      .map((adapter) => adapter.name)
    return reply.code(ready.length > 0 && !closing ? 200 : 503).send({ ready: ready.length > 0 && !closing, available: ready })
  })
  app.get('/metrics', async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()))
  app.get('/docs/json', async () => openApiDocument())

  // The MCP SDK and zod load at the first /mcp call, not at start-up: ~100 ms of a server's way to ready.
  let mcpHandler: Promise<ReturnType<typeof import('./mcp').mcpHttpHandler>> | undefined
  app.post('/mcp', async (request, reply) =>
    (await (mcpHandler ??= import('./mcp').then(({ mcpHttpHandler }) => mcpHttpHandler(execgate, tenantSession))))(request, reply),
  )
  app.get('/mcp', async (_request, reply) =>
    reply
      .code(405)
      .header('allow', 'POST')
      .send({ error: { code: 'EXECGATE_NOT_FOUND', message: '[execgate] /mcp takes POST (stateless streamable HTTP)' } }),
  )

  return { app, metrics, beginShutdown: () => (closing = true) }
}

export { tenantsByKey, EXECUTION_REQUEST_SCHEMA }
