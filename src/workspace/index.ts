export * from './types'
export { normalizeWorkspacePath, WORKSPACE_ROOT } from './paths'
export { globMatcher } from './glob'
export { MemoryWorkspace } from './memory'
export { DirectoryLayer } from './directory'
export { OverlayWorkspace } from './overlay'
export { ReadRecordingWorkspace } from './read-recorder'
export {
  RunHostFunctions,
  checkHostFunctionDefinition,
  type HostCall,
  type HostFunctionDefinition,
  type RunHostFunctionsOptions,
} from './host-functions'
export { STANDARD_HOST_FUNCTION_NAMES, standardHostFunctions } from './standard-functions'
export { S3Layer, S3Workspace } from './s3'
export { S3Objects, type S3Settings, type S3Entry } from './s3-objects'
export { readTar, writeTar, TarFormatError, type TarEntry, type TarEntryType } from './tar'
export {
  CONTAINER_ROOTS,
  UnsafeArchiveError,
  checkContainerArchive,
  checkContainerEntries,
  isContainerArchive,
  workspaceFilesOf,
  writeContainerArchive,
} from './container-archive'
