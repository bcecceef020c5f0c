import type { FabricStoreKind } from '../../config/store-kinds'
import { REDIS_DRIVER } from './redis'
import { SQLITE_DRIVER } from './sqlite'
import type { FabricStoreDriver } from './types'

export type { FabricStoreDriver, FabricStoreSettings } from './types'

/**
 * Store kind → its driver (unstorage's driver table; the kinds are named in src/config/store-kinds.ts). Adding a store
 * is one folder's driver, one line here and one in FABRIC_STORE_KINDS, and the shared suite (test/fabric/drivers.test.ts)
 * run against it; nothing above the stores names a kind.
 */
export const FABRIC_STORE_DRIVERS: Readonly<Record<FabricStoreKind, FabricStoreDriver>> = {
  sqlite: SQLITE_DRIVER,
  redis: REDIS_DRIVER,
}

export function storeDriver(kind: FabricStoreKind): FabricStoreDriver {
  return FABRIC_STORE_DRIVERS[kind]
}
