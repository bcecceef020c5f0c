import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ExecgateError, type ExecutionListener } from '../core'
import type { Execgate } from '../index'
import * as tokens from '../app/tokens'
import { storeDriver } from '../fabric/drivers'
import { ActivityRecorder, summarizeActivity } from './activity'
import { RedisActivityLog } from './activity-redis'
import { ReadinessHistory } from './readiness-history'
import type { Tenant } from './tenants'

/**
 * What the console's Adapters and Activity pages show, as public routes under /v1 behind the same keys as the rest
 * (docs/api.md): the activity of the caller's runs, the readiness timeline, and each adapter's enforcement table.
 */

const MAX_BUCKETS = 720

function wholeNumber(query: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
  const raw = query[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max)
    throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `${name} must be a whole number from ${min} to ${max}` })
  return value
}

export interface ObservationOptions {
  /** API keys → tenants; with none (an open server on loopback) every run is the caller's. */
  tenants: ReadonlyMap<string, Tenant>
}

export function registerObservationRoutes(app: FastifyInstance, execgate: Execgate, options: ObservationOptions): void {
  const { config } = execgate
  // On a shared store every node's runs are charted from Redis; on the embedded one, this node's ring buffer.
  const shared = storeDriver(config.fabric.store).shared
    ? new RedisActivityLog(
        { redisUrl: config.fabric.redisUrl, redisPrefix: config.fabric.redisPrefix, node: execgate.sandboxes.nodeId },
        config.server.activityCapacity,
        app.log,
      )
    : undefined
  const activity = new ActivityRecorder(config.server.activityCapacity, Date.now, shared && ((entry) => shared.record(entry)))
  // Bound like the metrics: every run of this execgate is recorded, whoever started it, until the server closes.
  const binding = execgate.container.bind<ExecutionListener>(tokens.ExecutionListener).toConstantValue(activity).getIdentifier()
  const history = new ReadinessHistory(execgate.readiness)
  app.addHook('onClose', async () => {
    await execgate.container.unbind(binding)
    history.close()
    await shared?.close()
  })
  // A tenant sees only its own runs; the open server's single caller sees all of them.
  const tenantOf = (request: FastifyRequest) => (options.tenants.size > 0 ? request.tenant.name : undefined)

  app.get('/v1/activity', async (request) => {
    const query = request.query as Record<string, string | undefined>
    const windowSeconds = wholeNumber(query, 'windowSeconds', 300, 10, 86_400)
    const bucketSeconds = wholeNumber(query, 'bucketSeconds', Math.max(1, Math.round(windowSeconds / 60)), 1, windowSeconds)
    if (windowSeconds / bucketSeconds > MAX_BUCKETS)
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', {
        detail: `windowSeconds / bucketSeconds must be at most ${MAX_BUCKETS} buckets`,
      })
    const window = { windowMs: windowSeconds * 1000, bucketMs: bucketSeconds * 1000 }
    const now = Date.now()
    if (shared) {
      // A summary of all nodes, or (Redis unreachable) of this node alone, saying which.
      const read = await shared.read(now - window.windowMs - window.bucketMs, tenantOf(request)).catch((error: unknown) => {
        request.log.warn({ err: error }, "the deployment's activity could not be read: this node's alone is answered")
        return undefined
      })
      if (read)
        return {
          ...summarizeActivity(read.entries, window, now, shared.capacity, read.overwrittenBefore),
          scope: 'deployment',
          nodes: [...new Set(read.entries.map((entry) => entry.node))].sort(),
        }
    }
    const summary = summarizeActivity(activity.list(tenantOf(request)), window, now, activity.capacity, activity.overwrittenBefore())
    return { ...summary, scope: 'node', nodes: shared ? [execgate.sandboxes.nodeId] : [] }
  })

  app.get('/v1/readiness/events', async (request) => {
    const limit = wholeNumber(request.query as Record<string, string | undefined>, 'limit', history.capacity, 1, history.capacity)
    return { capacity: history.capacity, events: history.list().slice(-limit) }
  })

  app.get('/v1/adapters/:name/policy', async (request) => {
    const name = (request.params as { name: string }).name
    const known = execgate.adapters().map((adapter) => adapter.name)
    if (!known.includes(name))
      throw new ExecgateError('EXECGATE_NOT_FOUND', { detail: `no adapter "${name}" is enabled; enabled: ${known.join(', ')}` })
    const asked = (request.query as { profile?: string }).profile
    if (asked && options.tenants.size > 0 && !request.tenant.profiles.includes(asked)) {
      throw new ExecgateError('EXECGATE_FORBIDDEN', {
        detail:
          `tenant ${request.tenant.name} may not use the policy profile "${asked}" (allowed: ` +
          `${request.tenant.profiles.join(', ') || 'none'})`,
      })
    }
    const profile = asked || request.tenant.profile
    return { profile: profile ?? null, ...execgate.explainPolicy(name, profile) }
  })
}
