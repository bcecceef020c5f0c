export { SandboxManager, type SandboxManagerOptions } from './sandbox-manager'
export type {
  ArtifactFile,
  SandboxArtifactStore,
  SandboxFile,
  SavedArtifact,
  Sandbox,
  SandboxCaller,
  SandboxExecOptions,
  SandboxExecRequest,
  SandboxInfo,
  SandboxService,
  SandboxSettings,
  SandboxSnapshot,
  SandboxStartOptions,
} from './sandbox-types'
