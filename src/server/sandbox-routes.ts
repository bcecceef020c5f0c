import { randomUUID } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ExecgateError, isExecgateError, type ErrorCode } from '../core'
import type { Sandbox, SandboxCaller, SandboxExecRequest, SandboxStartOptions } from '../fabric/sandboxes'
import type { Execgate } from '../index'
import { registerSandboxForwarding } from './sandbox-forwarding'
import { sandboxBodyProblem } from './sandbox-schemas'
import { outputEvents } from './output-events'
import { retryAfterSeconds } from './retry-after'

/**
 * Persistent sandboxes over HTTP (docs/sandboxes.md). Every route is the calling tenant's: another tenant's sandbox
 * answers 404 exactly like a missing one. Sandboxes started through this server are stopped when it closes.
 */

/** Refusals of an exec worth retrying, answered like POST /v1/executions answers them. */
const RETRY_STATUS: Partial<Record<ErrorCode, number>> = {
  EXECGATE_QUEUE_FULL: 429,
  EXECGATE_QUOTA_EXCEEDED: 429,
  EXECGATE_SHUTTING_DOWN: 503,
}

const callerOf = (request: FastifyRequest): SandboxCaller => ({
  tenant: request.tenant.name,
  ...(request.tenant.profile ? { profile: request.tenant.profile } : {}),
})
const idOf = (request: FastifyRequest) => (request.params as { id: string }).id
const pathOf = (request: FastifyRequest) => (request.params as { '*': string })['*']

function notFound(request: FastifyRequest): ExecgateError {
  return new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no sandbox "${idOf(request)}" for tenant ${request.tenant.name}` })
}

export function registerSandboxRoutes(app: FastifyInstance, execgate: Execgate): void {
  const owned = (request: FastifyRequest): Sandbox => {
    const sandbox = execgate.sandboxes.get(idOf(request), callerOf(request))
    if (!sandbox) throw notFound(request)
    return sandbox
  }
  // The tenants this server has served sandbox calls to (HTTP or MCP): their sandboxes end with the server.
  const served = new Set<string>()
  app.addHook('onRequest', async (request) => {
    const url = request.url.split('?')[0]!
    if (url.startsWith('/v1/sandboxes') || url === '/mcp') served.add(request.tenant.name)
  })
  app.addHook('onClose', async () => execgate.sandboxes.stopAll({ tenants: [...served], reason: 'the server closed' }))
  registerSandboxForwarding(app, execgate, callerOf)

  app.post('/v1/sandboxes', async (request, reply) => {
    const body = request.body ?? {}
    const problem = sandboxBodyProblem('start', body)
    if (problem) throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: problem })
    const sandbox = await execgate.sandboxes.start(body as SandboxStartOptions, callerOf(request))
    return reply.code(201).header('location', `/v1/sandboxes/${sandbox.id}`).send(sandbox.info())
  })

  // Every node's (the registry's), this node's fresh; a sandbox of a node that is gone says `state: 'lost'`.
  app.get('/v1/sandboxes', async (request) => ({ sandboxes: await execgate.sandboxes.listEverywhere(callerOf(request)) }))
  app.get('/v1/sandboxes/:id', async (request) => owned(request).info())
  app.delete('/v1/sandboxes/:id', async (request, reply) => {
    if (!(await execgate.sandboxes.stop(idOf(request), callerOf(request)))) throw notFound(request)
    return reply.code(204).send()
  })

  // JSON: the ExecutionResult. With `Accept: text/event-stream`: `stdout`/`stderr` events as produced, then `result`.
  app.post('/v1/sandboxes/:id/exec', async (request, reply) => {
    const problem = sandboxBodyProblem('exec', request.body)
    if (problem) throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: problem })
    const sandbox = owned(request)
    const body = request.body as SandboxExecRequest
    const exec: SandboxExecRequest = { ...body, traceId: body.traceId ?? randomUUID() }
    // The caller going away cancels the exec; the sandbox lives on.
    const controller = new AbortController()
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) controller.abort()
    })
    if (!(request.headers.accept ?? '').includes('text/event-stream')) {
      const result = await sandbox.exec(exec, { signal: controller.signal })
      const code = result.error?.code as ErrorCode | undefined
      if (result.status === 'invalid_request' && code === 'EXECGATE_SANDBOX_STOPPED') throw notFound(request)
      const retryWith = code ? RETRY_STATUS[code] : undefined
      if (retryWith && result.status === 'unavailable') {
        reply.header('Retry-After', retryAfterSeconds(result.retryAfterMs))
        return reply
          .code(retryWith)
          .send({ error: { code, message: result.message }, traceId: result.traceId, retryAfterMs: result.retryAfterMs })
      }
      return result
    }
    reply.hijack()
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
    const send = (event: string, data: unknown) => reply.raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)
    const outputs = outputEvents(send)
    const result = await sandbox.exec(exec, {
      signal: controller.signal,
      onOutput: (stream, chunk) => send(stream, { chunk }),
      onRichOutput: outputs.onRichOutput,
    })
    outputs.rest(result)
    send('result', result)
    reply.raw.end()
  })

  // Stores a workspace file in the ledger's blob store; GET /v1/artifacts/:sha256 then serves it to this tenant.
  app.post('/v1/sandboxes/:id/artifacts', async (request, reply) => {
    const problem = sandboxBodyProblem('save', request.body)
    if (problem) throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: problem })
    const sandbox = owned(request)
    const { path } = request.body as { path: string }
    try {
      const saved = await sandbox.saveArtifact(path)
      return reply.code(201).header('location', `/v1/artifacts/${saved.sha256}`).send(saved)
    } catch (error) {
      if (isExecgateError(error, 'EXECGATE_WORKSPACE_NOT_FOUND'))
        throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no file "${path}" in sandbox ${idOf(request)}` })
      throw error
    }
  })

  // The workspace as a content-addressed tar in the ledger; POST /v1/sandboxes { from } restores it on any node.
  app.post('/v1/sandboxes/:id/snapshots', async (request, reply) => {
    const snapshot = await owned(request).snapshot()
    return reply.code(201).header('location', `/v1/artifacts/${snapshot.id}`).send(snapshot)
  })

  app.get('/v1/sandboxes/:id/files', async (request) => ({ files: await owned(request).listFiles() }))
  app.get('/v1/sandboxes/:id/files/*', async (request, reply) => {
    try {
      const content = await owned(request).readFile(pathOf(request))
      return reply.type('application/octet-stream').send(content)
    } catch (error) {
      if (isExecgateError(error, 'EXECGATE_WORKSPACE_NOT_FOUND'))
        throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no file "${pathOf(request)}" in sandbox ${idOf(request)}` })
      throw error
    }
  })
  app.delete('/v1/sandboxes/:id/files/*', async (request, reply) => {
    if (!(await owned(request).deleteFile(pathOf(request))))
      throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no file "${pathOf(request)}" in sandbox ${idOf(request)}` })
    return reply.code(204).send()
  })
  // The body is the file's bytes, whatever its content type; up to `workspace.maxFileBytes`. Or ?sha256= and no body.
  void app.register(async (files) => {
    files.removeAllContentTypeParsers()
    files.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: execgate.config.workspace.maxFileBytes }, (_request, body, done) =>
      done(null, body),
    )
    files.put(
      '/v1/sandboxes/:id/files/*',
      { bodyLimit: execgate.config.workspace.maxFileBytes },
      async (request: FastifyRequest, reply: FastifyReply) => {
        const content = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
        // ?sha256=: the file is an artifact of the tenant's, read from the ledger (a body as well would be ambiguous).
        const { sha256 } = request.query as { sha256?: string }
        if (sha256 !== undefined && content.length > 0)
          throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'give the file as the body or as ?sha256=, not both' })
        await owned(request).writeFile(pathOf(request), sha256 !== undefined ? { sha256 } : content)
        return reply.code(204).send()
      },
    )
  })
}
