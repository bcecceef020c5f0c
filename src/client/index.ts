/**
 * `execgate/client`: a typed HTTP client for an execgate server (docs/clients.md). It imports nothing but the
 * platform's fetch, streams and TextDecoder, so it runs in Node 18+, Deno, Bun and browsers; the types are the
 * library's own (type-only imports), checked against the server's OpenAPI document by test/client.
 */
export { ExecgateClient, RemoteSandboxes, type ExecgateClientOptions } from './execgate-client'
export { RemoteSandbox, type RemoteExecOptions } from './remote-sandbox'
export { RemoteTasks, RemotePlans, type EventStreamOptions } from './remote-fabric'
export { RemoteLedger, RemoteFiles } from './remote-ledger'
export { RemoteUploads, type UploadSource, type UploadOptions, type UploadResult } from './remote-uploads'
export { ExecgateClientError, isExecgateClientError } from './client-error'
export { CLIENT_ROUTES, type RouteName } from './client-routes'
export { readSse, type SseMessage } from './sse'
export type { CallOptions, TransportOptions } from './http-transport'
export type { RetryOptions } from './retry-budget'
export type * from './client-types'
