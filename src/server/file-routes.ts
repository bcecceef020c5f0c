import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ExecgateError } from '../core'
import type { Execgate } from '../index'

/**
 * Uploads by digest (docs/data.md#uploads): `PUT /v1/files` streams the body into the upload store (never buffered
 * whole, the tenant's quota counted as it arrives), and requests, tasks, plans and sandboxes then name the file as
 * `{ path, sha256 }`. A tenant sees only its own uploads: another tenant's digest answers 404 like a missing one.
 */
export function registerFileRoutes(app: FastifyInstance, execgate: Execgate): void {
  const uploads = execgate.uploads
  const digestOf = (request: FastifyRequest) => (request.params as { sha256: string }).sha256.replace(/^sha256:/, '')
  const notFound = (request: FastifyRequest, sha256: string) =>
    new ExecgateError('EXECGATE_FILE_NOT_FOUND', { sha256: sha256.slice(0, 80), tenant: request.tenant.name })

  // Its own scope: the body is the file's raw bytes whatever its Content-Type, read as a stream by the handler, not by
  // the server's JSON parser (which would buffer it against server.bodyLimitBytes).
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers()
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined))
    scope.put('/v1/files', async (request: FastifyRequest, reply: FastifyReply) => {
      const expected = (request.query as { sha256?: string }).sha256?.replace(/^sha256:/, '')
      if (expected !== undefined && !/^[0-9a-f]{64}$/.test(expected))
        throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: 'sha256 must be 64 lowercase hexadecimal characters' })
      // Already held: nothing to read (a client that asks first with HEAD never sends the bytes at all).
      const held = expected ? await uploads.find(request.tenant.name, expected) : undefined
      if (held) return reply.code(200).send({ ...held, reused: true })
      const stored = await uploads.put(request.tenant.name, request.raw, expected)
      return reply.code(stored.reused ? 200 : 201).send(stored)
    })
  })

  app.get('/v1/files', async (request) => ({
    files: await uploads.list(request.tenant.name),
    usedBytes: await uploads.used(request.tenant.name),
    quotaBytes: execgate.config.fabric.files.quotaBytes,
  }))
  // GET answers HEAD too (Fastify's exposeHeadRoutes): a client asks before it uploads.
  app.get('/v1/files/:sha256', async (request) => {
    const sha256 = digestOf(request)
    const file = await uploads.find(request.tenant.name, sha256)
    if (!file) throw notFound(request, sha256)
    return file
  })
  app.delete('/v1/files/:sha256', async (request, reply) => {
    const sha256 = digestOf(request)
    if (!(await uploads.delete(request.tenant.name, sha256))) throw notFound(request, sha256)
    return reply.code(204).send()
  })
}
