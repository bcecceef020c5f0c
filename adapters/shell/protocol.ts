import type { FilesystemAccess, HostResultMessage, WorkspaceFile } from '../../src/core'

/** The job the shell adapter posts to a worker; everything else is the shared job protocol (src/core). */
export interface ShellJob {
  type: 'run'
  id: number
  script: string
  stdin?: string
  /** The workspace's files, placed under /workspace (none when the policy's filesystem is `none`). */
  files: WorkspaceFile[]
  filesystem: FilesystemAccess
  /** Milliseconds the run may take from when the worker receives the job. */
  remainingMs: number
  timeoutMs: number
  outputBytes: number
  /** The worker's heap cap, which sizes just-bash's own data limits below it. */
  memoryBytes: number
  maxCallDepth: number
  maxIterations: number
}

export type ToShellWorker = ShellJob | HostResultMessage
