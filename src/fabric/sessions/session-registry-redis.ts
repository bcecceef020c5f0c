import type { Redis } from 'ioredis'
import type { SessionRecord, SessionRegistry } from './session-registry'

/**
 * Moves a session to a new node only while the node it names is the one the caller found gone, so two nodes taking
 * the same session over at once cannot both win. KEYS: record, state, files. ARGV: expected node, record JSON, ttl ms.
 */
const TAKE_OVER = `
local raw = redis.call('GET', KEYS[1])
if raw and cjson.decode(raw).node ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], ARGV[3]) end
return 1
`

/** The session registry in the fabric's Redis (`fabric.redisPrefix`:session…), shared by every node. */
export class RedisSessionRegistry implements SessionRegistry {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  private recordKey(id: string): string {
    return `${this.prefix}:session:${id}`
  }
  private stateKey(id: string): string {
    return `${this.prefix}:session-state:${id}`
  }
  private filesKey(id: string): string {
    return `${this.prefix}:session-files:${id}`
  }

  async claim(record: SessionRecord, ttlMs: number): Promise<SessionRecord | undefined> {
    for (let attempt = 0; attempt < 3; attempt++) {
      if ((await this.redis.set(this.recordKey(record.id), JSON.stringify(record), 'PX', ttlMs, 'NX')) === 'OK') return undefined
      const held = await this.get(record.id)
      // Expired between the two commands: try the claim again.
      if (held) return held
    }
    return undefined
  }

  async put(record: SessionRecord, ttlMs: number, state?: Uint8Array, files?: Uint8Array): Promise<void> {
    const multi = this.redis.multi().set(this.recordKey(record.id), JSON.stringify(record), 'PX', ttlMs)
    if (state) multi.set(this.stateKey(record.id), Buffer.from(state.buffer, state.byteOffset, state.byteLength), 'PX', ttlMs)
    else multi.del(this.stateKey(record.id))
    if (files) multi.set(this.filesKey(record.id), Buffer.from(files.buffer, files.byteOffset, files.byteLength), 'PX', ttlMs)
    else multi.del(this.filesKey(record.id))
    await multi.exec()
  }

  async takeOver(record: SessionRecord, from: string, ttlMs: number): Promise<boolean> {
    const moved = await this.redis.eval(
      TAKE_OVER,
      3,
      this.recordKey(record.id),
      this.stateKey(record.id),
      this.filesKey(record.id),
      from,
      JSON.stringify(record),
      String(ttlMs),
    )
    return moved === 1
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    const raw = await this.redis.get(this.recordKey(id))
    return raw ? (JSON.parse(raw) as SessionRecord) : undefined
  }

  async state(id: string): Promise<Uint8Array | undefined> {
    const bytes = await this.redis.getBuffer(this.stateKey(id))
    return bytes ? new Uint8Array(bytes) : undefined
  }

  async files(id: string): Promise<Uint8Array | undefined> {
    const bytes = await this.redis.getBuffer(this.filesKey(id))
    return bytes ? new Uint8Array(bytes) : undefined
  }

  async remove(id: string): Promise<void> {
    await this.redis.del(this.recordKey(id), this.stateKey(id), this.filesKey(id))
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect())
  }
}
