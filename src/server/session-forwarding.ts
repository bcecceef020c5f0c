import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ExecgateError } from '../core'
import type { Execgate } from '../index'
import { FORWARDED_HEADER, forwardToNode } from './node-forwarding'

/**
 * A session's calls reach it through any node (docs/sandboxes.md#sessions-across-nodes): an execution with a
 * `sessionId`, or the session's DELETE, that reaches a node which does not hold the session is forwarded to the node
 * that does, found in the session registry. A session whose node is gone is the library's to answer (monty's state
 * restored here, any other adapter's `EXECGATE_SESSION_LOST`), so those calls run on as usual.
 */
export function registerSessionForwarding(
  app: FastifyInstance,
  execgate: Execgate,
  scope: (request: FastifyRequest, sessionId: string) => string,
): void {
  // preHandler: an execution names its session in the body, which is parsed by then.
  app.addHook('preHandler', async (request, reply) => {
    if (request.headers[FORWARDED_HEADER]) return
    const path = request.url.split('?')[0]!
    let sessionId: unknown
    if (request.method === 'POST' && path === '/v1/executions') sessionId = (request.body as { sessionId?: unknown } | undefined)?.sessionId
    else if (request.method === 'DELETE' && path.startsWith('/v1/sessions/')) sessionId = (request.params as { id?: string }).id
    if (typeof sessionId !== 'string' || !sessionId) return
    const where = await execgate.locateSession(scope(request, sessionId))
    if (where.kind !== 'node' || !where.node.url) return
    const { url } = where.node
    forwardToNode(request, reply, {
      url,
      from: execgate.sandboxes.nodeId,
      ...(request.method === 'POST' ? { json: request.body } : {}),
      unreachable: (detail) =>
        new ExecgateError('EXECGATE_SESSION_ELSEWHERE', {
          id: sessionId,
          node: where.node.id,
          url,
          detail: `it did not answer: ${detail}`,
        }),
    })
    return reply
  })
}
