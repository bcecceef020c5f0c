import type { OptionalBackend } from '../core/optional-dependency'

/**
 * The fabric's store kinds (`fabric.store`, `fabric.ledger.store`), named once. Each kind's factories (tasks and their
 * dispatcher, plans, ledger records, the sandbox and session registries) are its row of the driver table,
 * src/fabric/drivers/index.ts; the config checks a value against this list, and asks for the optional backend a kind
 * needs before anything opens.
 */
export const FABRIC_STORE_KINDS = ['sqlite', 'redis'] as const

export type FabricStoreKind = (typeof FABRIC_STORE_KINDS)[number]

/** The optional peer dependency a kind's stores load (src/core/optional-dependency.ts); none for the embedded one. */
export const STORE_KIND_BACKENDS: Readonly<Record<FabricStoreKind, OptionalBackend | undefined>> = {
  sqlite: undefined,
  redis: 'redis',
}
