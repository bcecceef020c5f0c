/** One file as listings return it. */
export interface WorkspaceEntry {
  path: string
  size: number
}

/** Size limits of a workspace. */
export interface WorkspaceLimits {
  /** Largest file that can be written or read. @default 10 MiB */
  maxFileBytes: number
  /** Total bytes the writable layer may hold. @default 50 MiB */
  maxTotalBytes: number
  /** Most files the writable layer may hold. @default 1000 */
  maxFiles: number
}

export const DEFAULT_WORKSPACE_LIMITS: Readonly<WorkspaceLimits> = Object.freeze({
  maxFileBytes: 10 * 1024 * 1024,
  maxTotalBytes: 50 * 1024 * 1024,
  maxFiles: 1000,
})

/** Files that can be read and listed: a host directory, or a workspace used as another's stable layer. */
export interface WorkspaceLayer {
  /** The file's bytes, or undefined when there is no such file. Paths are already normalised. */
  read(path: string): Promise<Buffer | undefined>
  list(): Promise<WorkspaceEntry[]>
}

/** A readable and writable workspace; paths given to it are normalised with `normalizeWorkspacePath`. */
export interface Workspace extends WorkspaceLayer {
  write(path: string, content: Buffer): Promise<void>
  /** Files written since the workspace was created (for an overlay: the overlay's files), for results. */
  changes(): { path: string; content: Buffer }[]
}
