import type { Redis } from 'ioredis'
import { runScript } from '../redis-script'
import { chainRecord, GENESIS, parseBody } from './chain'
import { linksOf } from './entry-links'
import type { AppendOptions, LedgerRecordStore } from './record-store'
import { GENERATED_ROLES, type ArtifactLink, type ChainPoint, type RecordBody, type RecordDraft, type StoredRecord } from './types'

/**
 * The distributed record store: records on the Redis of `fabric.redisUrl`, so a run a worker on any machine did is
 * found by the server that is asked about it, and each tenant has one chain whichever node appended. Hashes are
 * computed here (Redis's Lua has no SHA-256); an append is a compare-and-set on the tenant's head (a Lua script
 * writes the records, their indexes and the new head together, or nothing when another node appended first, and
 * the append is composed again on the new head).
 *
 * Keys under the prefix, `<t>` the tenant (URI-encoded): `chain:<t>` (hash: head_seq, head_hash, checkpoint_seq,
 * checkpoint_hash), `records:<t>` (hash seq → {id, hash, body}), `ids:<t>` (hash id → seq), `used:<t>:<sha>` and
 * `generated:<t>:<sha>` (sets of seqs), `artifacts:<t>` (hash sha → link JSON), `counts:<t>` (hash sha → references),
 * `bytes:<t>` (distinct artifact bytes), `refs` (hash sha → tenants referencing it), `tenants` (set), `policies`
 * (hash sha → a policy's canonical JSON, written with the records that name it, never removed). The scripts
 * build key names from the prefix, so the store needs one Redis (not a Cluster), like the task store's BullMQ queue.
 */

const APPEND = `
local P, T, tenant = ARGV[1], ARGV[2], ARGV[3]
local data = cjson.decode(ARGV[4])
local chain = P .. ':chain:' .. T
local head = tonumber(redis.call('HGET', chain, 'head_seq') or '0')
local checkpoint = tonumber(redis.call('HGET', chain, 'checkpoint_seq') or '0')
if math.max(head, checkpoint) ~= data.expect then return 0 end
for _, p in ipairs(data.policies) do redis.call('HSETNX', P .. ':policies', p.sha256, p.text) end
for _, r in ipairs(data.records) do
  redis.call('HSET', P .. ':records:' .. T, r.seq, r.value)
  redis.call('HSET', P .. ':ids:' .. T, r.id, r.seq)
  for _, l in ipairs(r.links) do
    redis.call('SADD', P .. ':' .. l.dir .. ':' .. T .. ':' .. l.sha, r.seq)
    if redis.call('HINCRBY', P .. ':counts:' .. T, l.sha, 1) == 1 then
      redis.call('HSET', P .. ':artifacts:' .. T, l.sha, l.link)
      redis.call('INCRBY', P .. ':bytes:' .. T, l.size)
      redis.call('HINCRBY', P .. ':refs', l.sha, 1)
    end
  end
end
redis.call('HSET', chain, 'head_seq', data.head.seq, 'head_hash', data.head.hash)
redis.call('SADD', P .. ':tenants', tenant)
return 1
`

const REMOVE = `
local P, T = ARGV[1], ARGV[2]
local data = cjson.decode(ARGV[3])
for _, r in ipairs(data.records) do
  redis.call('HDEL', P .. ':records:' .. T, r.seq)
  redis.call('HDEL', P .. ':ids:' .. T, r.id)
  for _, l in ipairs(r.links) do
    redis.call('SREM', P .. ':' .. l.dir .. ':' .. T .. ':' .. l.sha, r.seq)
    if redis.call('HINCRBY', P .. ':counts:' .. T, l.sha, -1) <= 0 then
      redis.call('HDEL', P .. ':counts:' .. T, l.sha)
      redis.call('HDEL', P .. ':artifacts:' .. T, l.sha)
      redis.call('DECRBY', P .. ':bytes:' .. T, l.size)
      if redis.call('HINCRBY', P .. ':refs', l.sha, -1) <= 0 then redis.call('HDEL', P .. ':refs', l.sha) end
    end
  end
end
redis.call('HSET', P .. ':chain:' .. T, 'checkpoint_seq', data.checkpoint.seq, 'checkpoint_hash', data.checkpoint.hash)
return 1
`

export interface RedisLedgerStoreOptions {
  redis: Redis
  /** @default 'execgate:ledger' */
  prefix?: string
  /** Close the connection on `close`. */
  ownsConnection?: boolean
}

/** Appends that lost the race to another node are composed again on the new head this many times. */
const CAS_ATTEMPTS = 50

interface StoredValue {
  id: string
  hash: string
  body: string
}

function scriptLinks(body: RecordBody) {
  return linksOf(body.entry).map((link) => ({
    sha: link.sha256,
    dir: GENERATED_ROLES.includes(link.role) ? 'generated' : 'used',
    size: link.size,
    link: JSON.stringify(link),
  }))
}

export class RedisLedgerStore implements LedgerRecordStore {
  private readonly redis: Redis
  private readonly prefix: string

  constructor(private readonly options: RedisLedgerStoreOptions) {
    this.redis = options.redis
    this.prefix = options.prefix ?? 'execgate:ledger'
  }

  private key(kind: string, tenant: string, ...rest: string[]): string {
    return [this.prefix, kind, encodeURIComponent(tenant), ...rest].join(':')
  }

  private toRecord(tenant: string, seq: number, raw: string | null | undefined): StoredRecord | undefined {
    if (!raw) return undefined
    const value = JSON.parse(raw) as StoredValue
    return { tenant, seq, id: value.id, hash: value.hash, body: value.body }
  }

  private async chain(tenant: string): Promise<{ head?: ChainPoint; checkpoint?: ChainPoint }> {
    const [headSeq, headHash, checkpointSeq, checkpointHash] = await this.redis.hmget(
      this.key('chain', tenant),
      'head_seq',
      'head_hash',
      'checkpoint_seq',
      'checkpoint_hash',
    )
    return {
      ...(headSeq != null && headHash != null ? { head: { seq: Number(headSeq), hash: headHash } } : {}),
      ...(checkpointSeq != null && checkpointHash != null ? { checkpoint: { seq: Number(checkpointSeq), hash: checkpointHash } } : {}),
    }
  }

  async append(drafts: readonly RecordDraft[], options: AppendOptions = {}): Promise<StoredRecord[]> {
    const byTenant = new Map<string, RecordDraft[]>()
    for (const draft of drafts) byTenant.set(draft.tenant, [...(byTenant.get(draft.tenant) ?? []), draft])
    const stored = new Map<RecordDraft, StoredRecord>()
    for (const [tenant, group] of byTenant) {
      for (let attempt = 0; ; attempt++) {
        if (attempt >= CAS_ATTEMPTS)
          throw new Error(`[execgate] [ledger] could not append to tenant ${tenant}'s chain: ${CAS_ATTEMPTS} other appends came first`)
        const { head, checkpoint } = await this.chain(tenant)
        let tip = head && head.seq > (checkpoint?.seq ?? 0) ? head : (checkpoint ?? GENESIS)
        const expect = tip.seq
        const seen = await this.redis.hmget(this.key('ids', tenant), ...group.map((draft) => draft.id))
        const fresh: StoredRecord[] = []
        const records = new Map<RecordDraft, StoredRecord>()
        const ids = new Set<string>()
        for (const [index, draft] of group.entries()) {
          const existingSeq = seen[index]
          if (existingSeq != null) {
            const existing = (await this.bySeq(tenant, [Number(existingSeq)]))[0]
            if (existing) records.set(draft, existing)
            continue
          }
          if (ids.has(draft.id)) continue
          ids.add(draft.id)
          const record = chainRecord(draft, tip)
          tip = { seq: record.seq, hash: record.hash }
          fresh.push(record)
          records.set(draft, record)
        }
        if (fresh.length > 0) {
          const payload = {
            expect,
            head: tip,
            // Every group's script writes them (HSETNX: once per digest), so whichever tenant's records name one, it is there.
            policies: options.policies ?? [],
            records: fresh.map((record) => ({
              seq: record.seq,
              id: record.id,
              value: JSON.stringify({ id: record.id, hash: record.hash, body: record.body } satisfies StoredValue),
              links: scriptLinks(parseBody(record)),
            })),
          }
          const applied = await runScript(this.redis, APPEND, 0, this.prefix, encodeURIComponent(tenant), tenant, JSON.stringify(payload))
          if (applied !== 1) continue
        }
        for (const draft of group) {
          const record = records.get(draft) ?? [...records.values()].find((item) => item.id === draft.id)
          if (record) stored.set(draft, record)
        }
        break
      }
    }
    return drafts.map((draft) => stored.get(draft)!).filter(Boolean)
  }

  async byId(tenant: string, id: string): Promise<StoredRecord | undefined> {
    const seq = await this.redis.hget(this.key('ids', tenant), id)
    return seq == null ? undefined : (await this.bySeq(tenant, [Number(seq)]))[0]
  }

  async bySeq(tenant: string, seqs: readonly number[]): Promise<StoredRecord[]> {
    if (seqs.length === 0) return []
    const raws = await this.redis.hmget(this.key('records', tenant), ...seqs.map(String))
    return seqs
      .map((seq, index) => this.toRecord(tenant, seq, raws[index]))
      .filter((record): record is StoredRecord => record !== undefined)
  }

  async page(tenant: string, afterSeq: number, limit: number): Promise<StoredRecord[]> {
    const { head } = await this.chain(tenant)
    const last = Math.min(head?.seq ?? 0, afterSeq + limit)
    const seqs: number[] = []
    for (let seq = afterSeq + 1; seq <= last; seq++) seqs.push(seq)
    return this.bySeq(tenant, seqs)
  }

  async linkedSeqs(tenant: string, sha256s: readonly string[], direction: 'used' | 'generated'): Promise<number[]> {
    if (sha256s.length === 0) return []
    const members = await this.redis.sunion(...sha256s.map((sha) => this.key(direction, tenant, sha)))
    return members.map(Number).sort((a, b) => a - b)
  }

  async artifact(tenant: string, sha256: string): Promise<ArtifactLink | undefined> {
    const raw = await this.redis.hget(this.key('artifacts', tenant), sha256)
    return raw ? (JSON.parse(raw) as ArtifactLink) : undefined
  }

  async head(tenant: string): Promise<ChainPoint | undefined> {
    return (await this.chain(tenant)).head
  }

  async checkpoint(tenant: string): Promise<ChainPoint | undefined> {
    return (await this.chain(tenant)).checkpoint
  }

  async tenants(): Promise<string[]> {
    return (await this.redis.smembers(`${this.prefix}:tenants`)).sort()
  }

  async removeThrough(tenant: string, seq: number): Promise<string[]> {
    const { checkpoint } = await this.chain(tenant)
    const from = (checkpoint?.seq ?? 0) + 1
    const seqs: number[] = []
    for (let at = from; at <= seq; at++) seqs.push(at)
    const records = await this.bySeq(tenant, seqs)
    const last = records.find((record) => record.seq === seq)
    if (!last) return []
    const removed = records.map((record) => ({ seq: record.seq, id: record.id, links: scriptLinks(parseBody(record)) }))
    await this.redis.eval(
      REMOVE,
      0,
      this.prefix,
      encodeURIComponent(tenant),
      JSON.stringify({ records: removed, checkpoint: { seq: last.seq, hash: last.hash } }),
    )
    return [...new Set(removed.flatMap((record) => record.links.map((link) => link.sha)))]
  }

  async policy(sha256: string): Promise<string | undefined> {
    return (await this.redis.hget(`${this.prefix}:policies`, sha256)) ?? undefined
  }

  async referenced(sha256: string): Promise<boolean> {
    return (await this.redis.hexists(`${this.prefix}:refs`, sha256)) === 1
  }

  async tenantBytes(tenant: string): Promise<number> {
    return Number((await this.redis.get(this.key('bytes', tenant))) ?? 0)
  }

  async close(): Promise<void> {
    if (this.options.ownsConnection) await this.redis.quit().catch(() => undefined)
  }
}
