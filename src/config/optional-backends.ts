import { assertInstalled, type OptionalBackend } from '../core/optional-dependency'
import type { ExecgateConfig } from './schema'
import { STORE_KIND_BACKENDS } from './store-kinds'

/**
 * The optional peer dependencies a configuration's stores need (src/core/optional-dependency.ts). A store is opened
 * at start-up and nothing works without it, so a missing package stops start-up with the `npm install …` line; an
 * adapter (lambda, bedrock, docker) instead answers `unavailable` with it and routing goes on without it.
 */
export function storeBackendsFor(config: Pick<ExecgateConfig, 'fabric'>): OptionalBackend[] {
  const { fabric } = config
  const needed = new Set<OptionalBackend>()
  const kinds = [fabric.store, ...(fabric.ledger.enabled && fabric.ledger.store !== 'auto' ? [fabric.ledger.store] : [])]
  for (const kind of kinds) {
    const backend = STORE_KIND_BACKENDS[kind]
    if (backend) needed.add(backend)
  }
  if ((fabric.ledger.enabled && fabric.ledger.blobs === 's3') || fabric.workspaces === 's3' || fabric.plans.workspaces === 's3')
    needed.add('s3')
  return [...needed]
}

/** Throws EXECGATE_DEPENDENCY_MISSING for the first store backend whose packages are not installed. */
export function assertStoreBackendsInstalled(config: Pick<ExecgateConfig, 'fabric'>, resolve?: (name: string) => string): void {
  for (const backend of storeBackendsFor(config)) assertInstalled(backend, resolve)
}
