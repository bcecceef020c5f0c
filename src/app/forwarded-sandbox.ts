import { ExecgateError, toWorkspaceFile, type ExecutionResult, type WorkspaceFile } from '../core'
import { ExecgateClient } from '../client'
import type { Config } from '../config/load'
import { apiKeyEntries } from '../config/api-keys'
import {
  FORWARDED_HEADER,
  type NodeRecord,
  type Sandbox,
  type SandboxExecOptions,
  type SandboxExecRequest,
  type SandboxFile,
  type SandboxRecord,
} from '../fabric/sandboxes'
import type { RemoteSandbox } from '../client/remote-sandbox'
import { normalizeWorkspacePath } from '../workspace'

/**
 * Another node's sandbox as a `Sandbox` of this process (`execgate.sandboxes.find()`, the MCP sandbox tools): every
 * call goes to its owner's HTTP API, as the tenant, by the tenant's API key from `server.apiKeys` or `EXECGATE_API_KEYS` (the deployment's
 * nodes share their configuration), marked forwarded so the owner never passes it on again. `exec` never throws, as
 * in-process; the file calls throw the owner's error codes.
 */
class ForwardedSandbox implements Sandbox {
  constructor(
    private readonly remote: RemoteSandbox,
    readonly tenant: string,
  ) {}

  get id(): string {
    return this.remote.id
  }
  get adapter(): string {
    return this.remote.adapter
  }
  info() {
    return this.remote.info()
  }
  exec(input: string | SandboxExecRequest, options: SandboxExecOptions = {}): Promise<ExecutionResult> {
    return this.remote.exec(input, {
      ...(options.onOutput ? { onOutput: options.onOutput } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    })
  }
  writeFile(path: string, content: string | Uint8Array | { sha256: string }): Promise<void> {
    return this.remote.writeFile(path, content)
  }
  async writeFiles(files: readonly SandboxFile[]): Promise<void> {
    for (const file of files) {
      if ('sha256' in file) await this.remote.writeFile(file.path, { sha256: file.sha256 })
      else await this.remote.writeFile(file.path, file.encoding === 'base64' ? Buffer.from(file.content, 'base64') : file.content)
    }
  }
  async readFile(path: string): Promise<Buffer> {
    return Buffer.from(await this.remote.readFile(path))
  }
  async readFiles(paths?: readonly string[]): Promise<WorkspaceFile[]> {
    const wanted = paths ?? (await this.remote.listFiles()).map((entry) => entry.path)
    const files: WorkspaceFile[] = []
    for (const path of wanted) files.push(toWorkspaceFile(normalizeWorkspacePath(path), await this.remote.readFile(path)))
    return files
  }
  listFiles() {
    return this.remote.listFiles()
  }
  deleteFile(path: string): Promise<boolean> {
    return this.remote.deleteFile(path)
  }
  saveArtifact(path: string) {
    return this.remote.saveArtifact(path)
  }
  snapshot() {
    return this.remote.snapshot()
  }
  stop(): Promise<void> {
    return this.remote.stop()
  }
}

/**
 * Each tenant's API key, from `server.apiKeys` and `EXECGATE_API_KEYS` (`tenant=key`): the key another node's HTTP
 * API knows the tenant by (the nodes of a deployment share their configuration and environment).
 */
function apiKeys(config: Config): Map<string, string> {
  const keys = new Map<string, string>()
  for (const entry of apiKeyEntries(config)) {
    const at = entry.indexOf('=')
    if (at > 0 && !keys.has(entry.slice(0, at))) keys.set(entry.slice(0, at), entry.slice(at + 1))
  }
  return keys
}

/** How this node reaches the sandboxes of other nodes (SandboxManagerOptions.reach). */
export function forwardedSandboxes(config: Config, nodeId: () => string) {
  const keys = apiKeys(config)
  return async (record: SandboxRecord, node: NodeRecord & { url: string }, tenant: string): Promise<Sandbox | undefined> => {
    const apiKey = keys.get(tenant)
    // With keys configured, the owner accepts the tenant only by its key; with none, the servers are open (loopback).
    if (keys.size > 0 && !apiKey)
      throw new ExecgateError('EXECGATE_SANDBOX_ELSEWHERE', {
        id: record.info.id,
        node: node.id,
        url: node.url,
        detail: `tenant ${tenant} has no API key in server.apiKeys or EXECGATE_API_KEYS to call it with`,
      })
    const client = new ExecgateClient({ url: node.url, ...(apiKey ? { apiKey } : {}), headers: { [FORWARDED_HEADER]: nodeId() } })
    const remote = await client.sandboxes.get(record.info.id)
    return remote ? new ForwardedSandbox(remote, tenant) : undefined
  }
}
