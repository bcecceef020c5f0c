/**
 * `execgate/server`: execgate over the network. `serve` runs the HTTP API (with /mcp) on an address and shuts it down
 * gracefully; `buildServer` gives the Fastify app without listening, to mount or test it; `createMcpServer` and
 * `serveMcpStdio` give the MCP tools to a transport of the caller's choice or to stdio.
 */
export { serve, type ServeOptions, type RunningServer } from './serve'
export { buildServer, type ServerOptions } from './app'
export { createMcpServer, serveMcpStdio } from './mcp'
export { tenantsByKey, type Tenant } from './tenants'
