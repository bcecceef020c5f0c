import type { Config } from './load'

/**
 * The API key entries (`tenant=key`) of a deployment: `server.apiKeys`, then `EXECGATE_API_KEYS` (comma-separated),
 * the one list both the server's tenants (src/server/tenants.ts) and a node calling another node as a tenant
 * (src/app/forwarded-sandbox.ts) read, so a key given only in the environment works for both.
 */
export function apiKeyEntries(config: Pick<Config, 'server'>, env: NodeJS.ProcessEnv = process.env): string[] {
  return [
    ...config.server.apiKeys,
    ...(env.EXECGATE_API_KEYS ?? '')
      .split(',')
      .map((item) => item.trim())
      .filter(Boolean),
  ]
}
