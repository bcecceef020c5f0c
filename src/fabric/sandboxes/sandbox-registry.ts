import type { NodeRecord, SandboxRecord } from './sandbox-types'

export type { NodeRecord, SandboxRecord } from './sandbox-types'

/**
 * Where every node finds every sandbox (docs/sandboxes.md#many-nodes): the node that owns it, its state and last use,
 * its last snapshot. One node's sandboxes live in that node's memory and backends; the registry is only the map, so a
 * request for a sandbox on another node can be forwarded to its owner, a per-tenant cap counted across nodes, and a
 * sandbox whose owner stopped sending heartbeats reported `lost` with its last snapshot.
 *
 * Two drivers: in memory (the embedded `sqlite` fabric: one node, nothing to share) and Redis (the `redis` fabric,
 * sandbox-registry-redis.ts), opened by the store driver `fabric.store` names (src/fabric/drivers).
 */

export interface SandboxRegistry {
  /** True when other nodes read the same registry (Redis). */
  readonly shared: boolean
  /**
   * Records a new sandbox unless its tenant already holds `maxPerTenant` running sandboxes on live nodes; atomic
   * across nodes, so two starts on two nodes cannot both take the last place. False when the cap is reached.
   */
  claim(record: SandboxRecord, maxPerTenant: number): Promise<boolean>
  /** Writes the owner's latest view (last use, execs, last snapshot, state). */
  put(record: SandboxRecord): Promise<void>
  get(id: string): Promise<SandboxRecord | undefined>
  /** The tenant's records, every node's. */
  list(tenant: string): Promise<SandboxRecord[]>
  remove(id: string): Promise<void>
  /** This node is alive for `ttlMs` more (its status beside). */
  heartbeat(node: NodeRecord, ttlMs: number): Promise<void>
  /** Live nodes: those whose last heartbeat has not expired. */
  nodes(): Promise<NodeRecord[]>
  node(id: string): Promise<NodeRecord | undefined>
  /** Says this node is gone at once (a clean shutdown), rather than when its heartbeat expires. */
  leave(id: string): Promise<void>
  close(): Promise<void>
}

/** The registry of one node: the embedded fabric, where no other node could forward or take over. */
export class MemorySandboxRegistry implements SandboxRegistry {
  readonly shared = false
  private readonly records = new Map<string, SandboxRecord>()
  private readonly alive = new Map<string, { node: NodeRecord; until: number }>()

  private isAlive(id: string): boolean {
    const entry = this.alive.get(id)
    return entry !== undefined && entry.until > Date.now()
  }

  async claim(record: SandboxRecord, maxPerTenant: number): Promise<boolean> {
    const held = [...this.records.values()].filter(
      (item) => item.info.tenant === record.info.tenant && item.state === 'running' && this.isAlive(item.node),
    ).length
    if (held >= maxPerTenant) return false
    this.records.set(record.info.id, record)
    return true
  }

  async put(record: SandboxRecord): Promise<void> {
    // One node: a stopped sandbox's caller holds its object, and no other node will ask.
    if (record.state === 'stopped') this.records.delete(record.info.id)
    else this.records.set(record.info.id, record)
  }

  async get(id: string): Promise<SandboxRecord | undefined> {
    return this.records.get(id)
  }

  async list(tenant: string): Promise<SandboxRecord[]> {
    return [...this.records.values()].filter((record) => record.info.tenant === tenant)
  }

  async remove(id: string): Promise<void> {
    this.records.delete(id)
  }

  async heartbeat(node: NodeRecord, ttlMs: number): Promise<void> {
    this.alive.set(node.id, { node, until: Date.now() + ttlMs })
  }

  async nodes(): Promise<NodeRecord[]> {
    return [...this.alive.values()].filter((entry) => entry.until > Date.now()).map((entry) => entry.node)
  }

  async node(id: string): Promise<NodeRecord | undefined> {
    return this.isAlive(id) ? this.alive.get(id)!.node : undefined
  }

  async leave(id: string): Promise<void> {
    this.alive.delete(id)
  }

  async close(): Promise<void> {}
}
