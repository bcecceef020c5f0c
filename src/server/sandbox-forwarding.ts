import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ExecgateError } from '../core'
import { sandboxLostError, type SandboxCaller } from '../fabric/sandboxes'
import type { Execgate } from '../index'
import { FORWARDED_HEADER, forwardToNode } from './node-forwarding'

/**
 * A sandbox's requests reach it through any node (docs/sandboxes.md#many-nodes). A request for a sandbox this node
 * does not hold is looked up in the sandbox registry: on another live node, it is forwarded there as it came (method,
 * path, headers with the caller's API key, body streamed; the answer streamed back, SSE included), so a load balancer
 * needs no stickiness; on a node that is gone, it is answered `lost` with the sandbox's last snapshot (GET of the
 * sandbox 200 with `state: 'lost'`, DELETE 204 forgetting it, anything else 410 `EXECGATE_SANDBOX_LOST`), never
 * left to hang. We forward rather than redirect: a redirect would need every node reachable by every client, and
 * fetch and SSE clients do not all follow a 307 with its body.
 */

const SANDBOX_PATH = /^\/v1\/sandboxes\/([^/?]+)(\/[^?]*)?(?:\?.*)?$/

function sendJson(reply: FastifyReply, status: number, body: unknown): void {
  reply.hijack()
  reply.raw.writeHead(status, { 'content-type': 'application/json; charset=utf-8' })
  reply.raw.end(JSON.stringify(body))
}

/** Registers the hook that forwards, or answers `lost`, before any sandbox route parses the body. */
export function registerSandboxForwarding(
  app: FastifyInstance,
  execgate: Execgate,
  callerOf: (request: FastifyRequest) => SandboxCaller,
): void {
  app.addHook('onRequest', async (request, reply) => {
    const match = SANDBOX_PATH.exec(request.url)
    if (!match) return
    const id = decodeURIComponent(match[1]!)
    const caller = callerOf(request)
    if (execgate.sandboxes.get(id, caller)) return
    const where = await execgate.sandboxes.locate(id, caller)
    if (where.kind === 'node') {
      // Already forwarded once: this node's record and the registry disagree; the route answers 404 as for any miss.
      if (request.headers[FORWARDED_HEADER] || !where.node.url) return
      const { url } = where.node
      forwardToNode(request, reply, {
        url,
        from: execgate.sandboxes.nodeId,
        unreachable: (detail) => new ExecgateError('EXECGATE_SANDBOX_ELSEWHERE', { id, node: where.record.node, url, detail }),
      })
      return reply
    }
    if (where.kind === 'lost') {
      const tail = match[2] ?? ''
      if (!tail && request.method === 'GET') {
        sendJson(reply, 200, { ...where.record.info, state: 'lost' })
        return reply
      }
      if (!tail && request.method === 'DELETE') {
        await execgate.sandboxes.forgetLost(id, caller)
        reply.hijack()
        reply.raw.writeHead(204)
        reply.raw.end()
        return reply
      }
      const error = sandboxLostError(where.record)
      sendJson(reply, 410, { error: { code: error.code, message: error.message }, sandbox: { ...where.record.info, state: 'lost' } })
      return reply
    }
    return
  })
}
