import type { Lane } from '../../core'

/** A tenant's admission settings (`admission.tenants.<name>`); every field is optional. */
export interface TenantAdmission {
  /** Every run of the tenant goes in this lane, whatever the request says. */
  lane?: Lane
  /** The lane of the tenant's requests that name none. */
  defaultLane?: Lane
  /** Runs the tenant may have going at once; more wait in the queue. */
  maxConcurrent?: number
  /** Runs the tenant may have waiting; more are refused. */
  maxQueued?: number
  /** CPU milliseconds (wall time where the backend does not measure CPU) the tenant's runs may use in a minute. */
  cpuMsPerMinute?: number
  /** Requests (refused attempts too) the tenant's runs may make through the egress gateway in a minute. */
  egressRequestsPerMinute?: number
  /** Bytes (sent and received) the tenant's runs may move through the egress gateway in a minute. */
  egressBytesPerMinute?: number
}

/**
 * The lane a run is admitted in: a tenant's fixed lane, else the request's, else the tenant's default, else the
 * configured default. A fixed lane wins so a tenant cannot buy its way into the reserved share by asking.
 */
export function resolveLane(requested: Lane | undefined, tenant: TenantAdmission | undefined, defaultLane: Lane): Lane {
  return tenant?.lane ?? requested ?? tenant?.defaultLane ?? defaultLane
}

/**
 * Slots of an adapter reserved for interactive work: `share` of its capacity, rounded up, while batch keeps at
 * least one slot (an adapter with one slot reserves none: a batch run could otherwise never start there).
 */
export function reservedSlots(capacity: number, share: number): number {
  if (capacity <= 1 || share <= 0) return 0
  return Math.min(capacity - 1, Math.ceil(capacity * share))
}
