import { MemoryWorkspace, type Workspace, type WorkspaceLimits } from '../workspace'

/** Makes a session's workspace; one with `clear` (a bucket's) has its files removed when the session is closed. */
export type SessionWorkspaceFactory = (sessionId: string) => Workspace & { clear?(): Promise<void> }

/**
 * The workspace of each session, kept between its calls and dropped when the session has been idle for the TTL
 * or is closed. Sessions never share one: the key is the session id, which the HTTP API scopes to its tenant.
 * In memory by default; with a factory (`fabric.workspaces: s3`) the files live in a bucket and an idle session's
 * handle is dropped here while its files stay for the next call, on this node or another.
 */
export class SessionWorkspaces {
  private readonly byId = new Map<string, { workspace: ReturnType<SessionWorkspaceFactory>; lastUsed: number }>()

  constructor(
    limits: WorkspaceLimits,
    private readonly ttlMs: number,
    private readonly maxSessions: number,
    private readonly create: SessionWorkspaceFactory = () => new MemoryWorkspace(limits),
  ) {}

  get(sessionId: string): Workspace {
    this.sweep()
    let held = this.byId.get(sessionId)
    if (!held) {
      // Past the limit the oldest idle workspace goes; interpreter sessions have their own limit and errors.
      if (this.byId.size >= this.maxSessions) this.byId.delete(this.byId.keys().next().value!)
      held = { workspace: this.create(sessionId), lastUsed: Date.now() }
    }
    // Re-inserting keeps the map in least-recently-used order.
    this.byId.delete(sessionId)
    this.byId.set(sessionId, held)
    held.lastUsed = Date.now()
    return held.workspace
  }

  /** The files of a session's workspace held here in memory; undefined when none is, or its files are in a bucket. */
  async files(sessionId: string): Promise<{ path: string; content: Buffer }[] | undefined> {
    const held = this.byId.get(sessionId)
    if (!held || held.workspace.clear) return undefined
    const files: { path: string; content: Buffer }[] = []
    for (const entry of await held.workspace.list()) {
      const content = await held.workspace.read(entry.path)
      if (content) files.push({ path: entry.path, content })
    }
    return files
  }

  /** Writes files into the session's workspace (made if none is held): a session taken over from another node. */
  async restore(sessionId: string, files: readonly { path: string; content: Buffer }[]): Promise<void> {
    const workspace = this.get(sessionId)
    for (const file of files) await workspace.write(file.path, file.content)
  }

  close(sessionId: string): boolean {
    const held = this.byId.get(sessionId)
    this.byId.delete(sessionId)
    // A bucket-backed session may have been opened on another node: its files go whether or not it is held here.
    const workspace = held?.workspace ?? this.create(sessionId)
    // Files left behind only cost storage (a bucket lifecycle rule removes them); closing must not fail for it.
    if (workspace.clear) void workspace.clear().catch(() => undefined)
    return held !== undefined
  }

  private sweep(): void {
    const cutoff = Date.now() - this.ttlMs
    for (const [id, held] of this.byId) if (held.lastUsed < cutoff) this.byId.delete(id)
  }
}
