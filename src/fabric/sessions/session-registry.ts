/**
 * Which node holds each session (docs/sandboxes.md#sessions-across-nodes): a session is an interpreter's state in
 * one node's adapter, so a call with its id must reach that node, or, when the node is gone, take the state over
 * where the adapter can move it (monty's REPL dump, kept here beside the record). Two drivers: in memory (one node)
 * and Redis (session-registry-redis.ts, every node of a `fabric.store: redis` deployment).
 */

/** A session as the registry keeps it; `id` is the adapters' id (the HTTP API's is prefixed with the tenant). */
export interface SessionRecord {
  id: string
  /** The node whose adapter holds the session's state. */
  node: string
  /** The adapter that last served a call of it; '' while its first call runs. */
  adapter: string
  updatedAt: string
  /** Its state's bytes are kept beside the record (adapters with `exportSession`: monty). */
  hasState: boolean
  /** Its workspace files are kept beside the record too (session-files.ts), with its state. */
  hasFiles?: boolean
}

export interface SessionRegistry {
  /** Records a new session for its node unless one is already recorded; answers the record that holds instead. */
  claim(record: SessionRecord, ttlMs: number): Promise<SessionRecord | undefined>
  /**
   * Writes the holder's latest view, and the state's and workspace files' bytes when given (what is not given goes);
   * all expire after `ttlMs` without a call.
   */
  put(record: SessionRecord, ttlMs: number, state?: Uint8Array, files?: Uint8Array): Promise<void>
  /** Moves a session to `record.node` if it is still held by `from` (two nodes taking over at once: one wins). */
  takeOver(record: SessionRecord, from: string, ttlMs: number): Promise<boolean>
  get(id: string): Promise<SessionRecord | undefined>
  /** The state's bytes saved with the record's last `put`. */
  state(id: string): Promise<Uint8Array | undefined>
  /** The workspace files' bytes saved with the record's last `put`. */
  files(id: string): Promise<Uint8Array | undefined>
  remove(id: string): Promise<void>
  close(): Promise<void>
}

/** One node's registry: nothing to share, kept so the directory reads alike on both stores. */
export class MemorySessionRegistry implements SessionRegistry {
  private readonly records = new Map<string, { record: SessionRecord; state?: Uint8Array; files?: Uint8Array; until: number }>()

  private entry(id: string) {
    const held = this.records.get(id)
    if (held && held.until <= Date.now()) this.records.delete(id)
    return held && held.until > Date.now() ? held : undefined
  }

  async claim(record: SessionRecord, ttlMs: number): Promise<SessionRecord | undefined> {
    const held = this.entry(record.id)
    if (held) return held.record
    this.records.set(record.id, { record, until: Date.now() + ttlMs })
    return undefined
  }

  async put(record: SessionRecord, ttlMs: number, state?: Uint8Array, files?: Uint8Array): Promise<void> {
    this.records.set(record.id, { record, ...(state ? { state } : {}), ...(files ? { files } : {}), until: Date.now() + ttlMs })
  }

  async takeOver(record: SessionRecord, from: string, ttlMs: number): Promise<boolean> {
    const held = this.entry(record.id)
    if (held && held.record.node !== from) return false
    const kept = { ...(held?.state ? { state: held.state } : {}), ...(held?.files ? { files: held.files } : {}) }
    this.records.set(record.id, { record, ...kept, until: Date.now() + ttlMs })
    return true
  }

  async get(id: string): Promise<SessionRecord | undefined> {
    return this.entry(id)?.record
  }

  async state(id: string): Promise<Uint8Array | undefined> {
    return this.entry(id)?.state
  }

  async files(id: string): Promise<Uint8Array | undefined> {
    return this.entry(id)?.files
  }

  async remove(id: string): Promise<void> {
    this.records.delete(id)
  }

  async close(): Promise<void> {}
}
