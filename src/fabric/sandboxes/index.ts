export { SandboxManager, type SandboxManagerOptions } from './sandbox-manager'
export { MemorySandboxRegistry, type NodeRecord, type SandboxRecord, type SandboxRegistry } from './sandbox-registry'
export { RedisSandboxRegistry } from './sandbox-registry-redis'
export { FORWARDED_HEADER } from './sandbox-types'
export { sandboxLostError } from './lost-sandbox'
export type {
  ArtifactFile,
  SandboxArtifactStore,
  SandboxUploads,
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
  SandboxWhereabouts,
  SandboxStartOptions,
} from './sandbox-types'
