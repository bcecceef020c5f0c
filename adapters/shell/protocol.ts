import type { FilesystemAccess, WorkspaceFile } from '../../src/core'

/** The job the shell adapter sends its child process (child.js); the answer is a ShellResultMessage. */
export interface ShellJob {
  type: 'run'
  id: number
  script: string
  stdin?: string
  /** The workspace's files, placed under /workspace (none when the policy's filesystem is `none`). */
  files: WorkspaceFile[]
  filesystem: FilesystemAccess
  /** Milliseconds the run may take from when the child receives the job. */
  remainingMs: number
  timeoutMs: number
  outputBytes: number
  /** The child's heap cap, which sizes just-bash's own data limits below it. */
  memoryBytes: number
  maxCallDepth: number
  maxIterations: number
  /** just-bash utilities to register; the opt-ins are never among them. */
  commands: string[]
  /** A persistent sandbox's run: answer with what it did to the workspace (`ShellWorkspaceChanges`). */
  keepWorkspace?: boolean
  /** Bytes the in-memory filesystem may hold (a sandbox's workspace bound), below the heap-derived one. */
  maxWorkspaceBytes?: number
}

/** How a sandbox's run left its workspace: files created or changed, and files removed. */
export interface ShellWorkspaceChanges {
  changed: WorkspaceFile[]
  deleted: string[]
}
