import type { Execgate } from '../index'
import type { Logger } from '../observability/logger'
import * as tokens from '../app/tokens'
import { buildServer } from './app'
import { tenantsByKey } from './tenants'

/** What this node shows of itself to every node (GET /v1/adapters's `nodes`): its adapters, slots and queues. */
function nodeStatus(execgate: Execgate): unknown {
  const status = execgate.status()
  return {
    adapters: status.adapters.map((adapter) => ({ name: adapter.name, tier: adapter.tier, health: adapter.health.state })),
    admission: status.admission,
  }
}

export interface ServeOptions {
  host?: string
  port?: number
}

export interface RunningServer {
  url: string
  /** Stops taking runs, lets those in flight finish up to the grace period, then disposes the adapters. */
  shutdown(): Promise<void>
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost'])

/** `execgate serve`: the HTTP API (and /mcp) on the configured address; SIGTERM/SIGINT shut it down gracefully. */
export async function serve(execgate: Execgate, options: ServeOptions = {}, handleSignals = true): Promise<RunningServer> {
  const config = execgate.config
  const logger = execgate.container.get<Logger>(tokens.Logger)
  const tenants = tenantsByKey(config)
  let host = options.host ?? config.server.host
  if (tenants.size === 0 && !LOOPBACK.has(host)) {
    logger.warn(
      { asked: host },
      'no API keys configured: binding 127.0.0.1 only (set server.apiKeys or EXECGATE_API_KEYS to serve other hosts)',
    )
    host = '127.0.0.1'
  }
  const { app, beginShutdown } = buildServer({ execgate, logger, tenants, bodyLimitBytes: config.server.bodyLimitBytes })
  await app.listen({ host, port: options.port ?? config.server.port })
  // Listening first keeps /healthz live at once; /readyz answers 503 until the first-tier adapters are warm.
  void execgate.ready().then(() => logger.info({}, 'first-tier adapters warm: ready (pyodide warms behind)'))
  // What sandboxes of a crashed server left (containers, folders, processes) goes now, not at the first sandbox.
  void execgate.sandboxes.sweep()
  const address = app.server.address()
  const url =
    typeof address === 'object' && address
      ? `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
      : String(address)
  // In the sandbox registry: other nodes forward this node's sandboxes' requests here (docs/sandboxes.md#many-nodes).
  await execgate.sandboxes.advertise(config.fabric.nodeUrl || url, () => nodeStatus(execgate))
  logger.info({ url, tenants: tenants.size, auth: tenants.size > 0 ? 'api keys' : 'none (loopback only)' }, 'execgate serving')
  let stopping: Promise<void> | undefined
  const shutdown = () =>
    (stopping ??= (async () => {
      beginShutdown()
      logger.info({ graceMs: config.server.shutdownGraceMs }, 'shutting down: no new runs; waiting for runs in flight')
      const grace = new Promise((resolve) => setTimeout(resolve, config.server.shutdownGraceMs).unref())
      await Promise.race([app.close(), grace])
      await execgate.dispose()
      logger.info({}, 'stopped')
    })())
  if (handleSignals) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => void shutdown().then(() => process.exit(0)))
  }
  return { url, shutdown }
}
