import type { Workspace, WorkspaceEntry } from './types'

/**
 * A run's view of its workspace that notes what the run read and did not write itself first: the files it took from
 * a stable layer, a session's earlier calls or a caller's workspace. Those are the run's inputs beyond its request's
 * files (the artifact ledger records them). Everything else passes straight through.
 */
export class ReadRecordingWorkspace implements Workspace {
  private readonly writtenHere = new Set<string>()
  private readonly readPaths = new Map<string, Buffer>()

  constructor(readonly inner: Workspace) {}

  async read(path: string): Promise<Buffer | undefined> {
    const content = await this.inner.read(path)
    if (content && !this.writtenHere.has(path)) this.readPaths.set(path, content)
    return content
  }

  list(): Promise<WorkspaceEntry[]> {
    return this.inner.list()
  }

  async write(path: string, content: Buffer): Promise<void> {
    await this.inner.write(path, content)
    this.writtenHere.add(path)
  }

  changes(): { path: string; content: Buffer }[] {
    return this.inner.changes()
  }

  /** Files read that this run had not written, with the bytes it read. */
  reads(): { path: string; content: Buffer }[] {
    return [...this.readPaths].map(([path, content]) => ({ path, content }))
  }
}
