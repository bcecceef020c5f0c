import { MemoryWorkspace, type WorkspaceLimits } from '../workspace'

/**
 * The workspace of each session, kept between its calls and dropped when the session has been idle for the TTL
 * or is closed. Sessions never share one: the key is the session id, which the HTTP API scopes to its tenant.
 */
export class SessionWorkspaces {
  private readonly byId = new Map<string, { workspace: MemoryWorkspace; lastUsed: number }>()

  constructor(
    private readonly limits: WorkspaceLimits,
    private readonly ttlMs: number,
    private readonly maxSessions: number,
  ) {}

  get(sessionId: string): MemoryWorkspace {
    this.sweep()
    let held = this.byId.get(sessionId)
    if (!held) {
      // Past the limit the oldest idle workspace goes; interpreter sessions have their own limit and errors.
      if (this.byId.size >= this.maxSessions) this.byId.delete(this.byId.keys().next().value!)
      held = { workspace: new MemoryWorkspace(this.limits), lastUsed: Date.now() }
    }
    // Re-inserting keeps the map in least-recently-used order.
    this.byId.delete(sessionId)
    this.byId.set(sessionId, held)
    held.lastUsed = Date.now()
    return held.workspace
  }

  close(sessionId: string): boolean {
    return this.byId.delete(sessionId)
  }

  private sweep(): void {
    const cutoff = Date.now() - this.ttlMs
    for (const [id, held] of this.byId) if (held.lastUsed < cutoff) this.byId.delete(id)
  }
}
