export { SandboxManager, type SandboxManagerOptions } from './sandbox-manager'
export type { Sandbox, SandboxCaller, SandboxExecOptions, SandboxExecRequest, SandboxInfo, SandboxService, SandboxSettings, SandboxStartOptions } from './sandbox-types'
