import type { MemoryWorkspace } from './memory'
import type { Workspace, WorkspaceEntry, WorkspaceLayer } from './types'

/** Reads fall through the overlay to the stable layer; writes land only in the overlay. */
export class OverlayWorkspace implements Workspace {
  constructor(
    readonly stable: WorkspaceLayer,
    readonly overlay: MemoryWorkspace,
  ) {}

  async read(path: string): Promise<Buffer | undefined> {
    return (await this.overlay.read(path)) ?? this.stable.read(path)
  }

  async list(): Promise<WorkspaceEntry[]> {
    const merged = new Map<string, WorkspaceEntry>()
    for (const entry of await this.stable.list()) merged.set(entry.path, entry)
    for (const entry of await this.overlay.list()) merged.set(entry.path, entry)
    return [...merged.values()].sort((a, b) => a.path.localeCompare(b.path))
  }

  write(path: string, content: Buffer): Promise<void> {
    return this.overlay.write(path, content)
  }

  changes(): { path: string; content: Buffer }[] {
    return this.overlay.changes()
  }
}
