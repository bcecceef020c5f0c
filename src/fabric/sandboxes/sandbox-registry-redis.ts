import type { Redis } from 'ioredis'
import type { NodeRecord, SandboxRecord, SandboxRegistry } from './sandbox-registry'

/** How long a stopped sandbox's record stays, so any node can still say where its last snapshot is. */
const STOPPED_TTL_SECONDS = 24 * 3600

/**
 * Counts the tenant's running sandboxes whose owner node still has a heartbeat, and records the new one only under the
 * cap: one script, so starts on several nodes at once are counted in one order (never a lock held by one process).
 * KEYS: tenant set, record key. ARGV: id, record JSON, cap, record-key prefix, node-key prefix.
 */
const CLAIM = `
local held = 0
for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local raw = redis.call('GET', ARGV[4] .. id)
  if raw then
    local record = cjson.decode(raw)
    if record.state == 'running' and redis.call('EXISTS', ARGV[5] .. record.node) == 1 then held = held + 1 end
  else
    redis.call('SREM', KEYS[1], id)
  end
end
if held >= tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[1], ARGV[1])
return 1
`

/** The registry in the fabric's Redis (`fabric.redisPrefix`:sandbox…): every node of the deployment reads and writes it. */
export class RedisSandboxRegistry implements SandboxRegistry {
  readonly shared = true

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly ownsConnection = true,
  ) {}

  private recordKey(id: string): string {
    return `${this.prefix}:sandbox:${id}`
  }
  private tenantKey(tenant: string): string {
    return `${this.prefix}:sandboxes-of:${tenant}`
  }
  private nodeKey(id: string): string {
    return `${this.prefix}:node:${id}`
  }

  async claim(record: SandboxRecord, maxPerTenant: number): Promise<boolean> {
    const claimed = await this.redis.eval(
      CLAIM,
      2,
      this.tenantKey(record.info.tenant),
      this.recordKey(record.info.id),
      record.info.id,
      JSON.stringify(record),
      String(maxPerTenant),
      `${this.prefix}:sandbox:`,
      `${this.prefix}:node:`,
    )
    return claimed === 1
  }

  async put(record: SandboxRecord): Promise<void> {
    const key = this.recordKey(record.info.id)
    if (record.state === 'stopped') await this.redis.set(key, JSON.stringify(record), 'EX', STOPPED_TTL_SECONDS)
    else await this.redis.multi().set(key, JSON.stringify(record)).sadd(this.tenantKey(record.info.tenant), record.info.id).exec()
  }

  async get(id: string): Promise<SandboxRecord | undefined> {
    const raw = await this.redis.get(this.recordKey(id))
    return raw ? (JSON.parse(raw) as SandboxRecord) : undefined
  }

  async list(tenant: string): Promise<SandboxRecord[]> {
    const ids = await this.redis.smembers(this.tenantKey(tenant))
    if (!ids.length) return []
    const raws = await this.redis.mget(ids.map((id) => this.recordKey(id)))
    return raws.filter((raw): raw is string => raw !== null).map((raw) => JSON.parse(raw) as SandboxRecord)
  }

  async remove(id: string): Promise<void> {
    const record = await this.get(id)
    const multi = this.redis.multi().del(this.recordKey(id))
    if (record) multi.srem(this.tenantKey(record.info.tenant), id)
    await multi.exec()
  }

  async heartbeat(node: NodeRecord, ttlMs: number): Promise<void> {
    await this.redis.multi().set(this.nodeKey(node.id), JSON.stringify(node), 'PX', ttlMs).sadd(`${this.prefix}:nodes`, node.id).exec()
  }

  async nodes(): Promise<NodeRecord[]> {
    const ids = await this.redis.smembers(`${this.prefix}:nodes`)
    if (!ids.length) return []
    const raws = await this.redis.mget(ids.map((id) => this.nodeKey(id)))
    const gone = ids.filter((_, index) => raws[index] === null)
    if (gone.length) await this.redis.srem(`${this.prefix}:nodes`, ...gone)
    return raws.filter((raw): raw is string => raw !== null).map((raw) => JSON.parse(raw) as NodeRecord)
  }

  async node(id: string): Promise<NodeRecord | undefined> {
    const raw = await this.redis.get(this.nodeKey(id))
    return raw ? (JSON.parse(raw) as NodeRecord) : undefined
  }

  async leave(id: string): Promise<void> {
    await this.redis.multi().del(this.nodeKey(id)).srem(`${this.prefix}:nodes`, id).exec()
  }

  async close(): Promise<void> {
    if (this.ownsConnection) await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
