import { ExecgateError, describeError, errorResult, type AdapterRegistry, type ExecutionRequest, type ExecutionResult } from '../../core'
import type { ExecuteOptions } from '../../execution/types'
import type { Logger } from '../../observability/logger'
import type { NodeRecord } from '../sandboxes'
import type { SessionRecord, SessionRegistry } from './session-registry'
import { decodeSessionFiles, encodeSessionFiles, SESSION_FILES_MAX_BYTES, type SessionFile } from './session-files'

/** Where a session is, seen from this node. */
export type SessionWhereabouts =
  { kind: 'here' } | { kind: 'new' } | { kind: 'node'; record: SessionRecord; node: NodeRecord } | { kind: 'lost'; record: SessionRecord }

export interface SessionDirectoryOptions {
  /** Opened at the first session call of a node that serves (a Redis connection for the `redis` store). */
  registry: () => SessionRegistry
  /**
   * This node's id while other nodes can reach it (`execgate serve` advertised it in the node registry); undefined
   * otherwise, and then sessions stay this process's own as they always were.
   */
  nodeId: () => string | undefined
  /** A live node by its heartbeat (the sandbox registry's), undefined when it is gone. */
  node(id: string): Promise<NodeRecord | undefined>
  adapters: AdapterRegistry
  /** How long a session lives without a call (`sessions.ttlSeconds`). */
  ttlMs: number
  /**
   * A session's workspace files held in this process's memory, and how they are put back (the execution service's):
   * kept beside a movable state, so a session taken over has its files too. Without it only the state moves.
   */
  workspaces?: {
    files(sessionId: string): Promise<SessionFile[] | undefined>
    restore(sessionId: string, files: readonly SessionFile[]): Promise<void>
  }
  logger?: Logger
}

/**
 * Sessions across nodes (docs/sandboxes.md#sessions-across-nodes): every session call on a serving node records the
 * node that holds the session, and for adapters whose state is bytes (`exportSession`: monty) the state after the
 * call. A call that reaches another node is forwarded by the HTTP API (src/server/session-forwarding.ts) and answered
 * `EXECGATE_SESSION_ELSEWHERE` by the library; a call for a session whose node is gone restores the state here where
 * it can, and otherwise answers `EXECGATE_SESSION_LOST` once, never a fresh session that forgot everything silently.
 */
export class SessionDirectory {
  /** Sessions this node holds, with the time of their last call: those need no registry read before a call. */
  private readonly held = new Map<string, number>()
  private opened: SessionRegistry | undefined

  constructor(private readonly options: SessionDirectoryOptions) {}

  private get registry(): SessionRegistry {
    return (this.opened ??= this.options.registry())
  }

  /** Where the session is; `here` for every session while this node does not serve (nothing to share). */
  async locate(sessionId: string): Promise<SessionWhereabouts> {
    const me = this.options.nodeId()
    if (!me) return { kind: 'here' }
    const last = this.held.get(sessionId)
    if (last !== undefined && Date.now() - last < this.options.ttlMs) return { kind: 'here' }
    return this.classify(await this.registry.get(sessionId), me)
  }

  private async classify(record: SessionRecord | undefined, me: string): Promise<SessionWhereabouts> {
    if (!record) return { kind: 'new' }
    if (record.node === me) return { kind: 'here' }
    const node = await this.options.node(record.node)
    return node ? { kind: 'node', record, node } : { kind: 'lost', record }
  }

  /** Runs a session call where the session is, or answers where it is; `run` is the execution service. */
  async execute(
    request: ExecutionRequest,
    options: ExecuteOptions | undefined,
    run: (request: ExecutionRequest, options?: ExecuteOptions) => Promise<ExecutionResult>,
  ): Promise<ExecutionResult> {
    const me = this.options.nodeId()
    const id = request.sessionId
    if (!me || id === undefined) return run(request, options)
    let where: SessionWhereabouts
    try {
      where = await this.locate(id)
      if (where.kind === 'new') {
        const holder = await this.registry.claim(this.recordOf(id, me, '', false), this.options.ttlMs)
        if (holder) where = await this.classify(holder, me)
      }
    } catch (error) {
      // The registry unreachable: the call runs here, as a session did before there were nodes to share it.
      this.options.logger?.warn({ session: id, err: describeError(error) }, 'session registry unreachable; the call runs on this node')
      return run(request, options)
    }
    let restored: string | undefined
    if (where.kind === 'node') return this.elsewhere(request.traceId, where.record, where.node)
    if (where.kind === 'lost') {
      const moved = await this.takeOver(id, where.record, me, request.traceId)
      if (moved.result) return moved.result
      restored = moved.restored
    }
    this.held.set(id, Date.now())
    const result = await run(request, options)
    await this.remember(id, result, me)
    if (!restored) return result
    return { ...result, message: result.message ? `${result.message} ${restored}` : restored }
  }

  /** A session whose node is gone: its state restored here when its adapter can take it, else the answer that it is lost. */
  private async takeOver(
    id: string,
    record: SessionRecord,
    me: string,
    traceId: string | undefined,
  ): Promise<{ result?: ExecutionResult; restored?: string }> {
    const adapter = this.options.adapters.get(record.adapter)
    const state = record.hasState && adapter?.importSession ? await this.registry.state(id) : undefined
    if (!adapter?.importSession || !state) {
      // Told once: the record goes, so the next call with this id starts a new session here.
      await this.registry.remove(id)
      const error = new ExecgateError('EXECGATE_SESSION_LOST', {
        id: publicId(id),
        node: record.node,
        adapter: record.adapter || 'its adapter',
        detail: 'its heartbeat expired',
      })
      return { result: errorResult('invalid_request', record.adapter || 'none', error, traceId ? { traceId } : {}) }
    }
    if (!(await this.registry.takeOver(this.recordOf(id, me, record.adapter, true), record.node, this.options.ttlMs))) {
      // Another node took it over first: it lives there now.
      const now = await this.classify(await this.registry.get(id), me)
      if (now.kind === 'node') return { result: this.elsewhere(traceId, now.record, now.node) }
    }
    await adapter.importSession(id, state)
    const files = await this.restoreFiles(id, record)
    this.options.logger?.info(
      { session: id, from: record.node, adapter: adapter.name, bytes: state.byteLength, files },
      'session taken over',
    )
    const withFiles = files === undefined ? '' : ` with its ${files} workspace file${files === 1 ? '' : 's'}`
    return {
      restored: `The session was restored on this node from the state its last call left${withFiles} (its node ${record.node} is gone).`,
    }
  }

  /** The session's workspace files kept with its state, written into its workspace here; how many, if any were kept. */
  private async restoreFiles(id: string, record: SessionRecord): Promise<number | undefined> {
    const { workspaces } = this.options
    if (!record.hasFiles || !workspaces) return undefined
    const bytes = await this.registry.files(id)
    if (!bytes) return undefined
    const files = decodeSessionFiles(bytes)
    await workspaces.restore(id, files)
    return files.length
  }

  private elsewhere(traceId: string | undefined, record: SessionRecord, node: NodeRecord): ExecutionResult {
    const error = new ExecgateError('EXECGATE_SESSION_ELSEWHERE', {
      id: publicId(record.id),
      node: node.id,
      url: node.url ?? 'no URL',
      detail: 'this node does not hold it; send the call to that node (the HTTP API forwards it there)',
    })
    return errorResult('unavailable', record.adapter || 'none', error, traceId ? { traceId } : {})
  }

  /** After a call: the session is this node's, with its state's bytes when its adapter can give them. */
  private async remember(id: string, result: ExecutionResult, me: string): Promise<void> {
    const adapter = this.options.adapters.get(result.adapter)
    try {
      if (!adapter?.capabilities.sessions) {
        // Refused before any adapter held it: the claim made for it goes, unless an earlier call made it real.
        const record = await this.registry.get(id)
        if (record?.node === me && !record.adapter) await this.registry.remove(id)
        this.held.delete(id)
        return
      }
      const state = await adapter.exportSession?.(id)
      // The files only matter where the state moves: a session that cannot move is lost with its node anyway.
      const files = state !== undefined ? await this.filesOf(id) : undefined
      const record = { ...this.recordOf(id, me, adapter.name, state !== undefined), ...(files ? { hasFiles: true } : {}) }
      await this.registry.put(record, this.options.ttlMs, state, files)
    } catch (error) {
      this.options.logger?.warn({ session: id, err: describeError(error) }, 'session registry write failed')
    }
  }

  /** The session's workspace files as the registry keeps them; undefined when there are none here, or too many bytes. */
  private async filesOf(id: string): Promise<Uint8Array | undefined> {
    const files = await this.options.workspaces?.files(id)
    if (!files?.length) return undefined
    const bytes = encodeSessionFiles(files)
    if (!bytes)
      this.options.logger?.warn(
        { session: id, files: files.length, maxBytes: SESSION_FILES_MAX_BYTES },
        'session workspace too large to keep with its state: a node taking the session over will not have its files',
      )
    return bytes
  }

  private recordOf(id: string, node: string, adapter: string, hasState: boolean): SessionRecord {
    return { id, node, adapter, hasState, updatedAt: new Date().toISOString() }
  }

  /** A closed session leaves the registry (its node closed its state). */
  async close(sessionId: string): Promise<void> {
    this.held.delete(sessionId)
    if (!this.options.nodeId()) return
    await this.registry.remove(sessionId).catch(() => undefined)
  }

  async dispose(): Promise<void> {
    await this.opened?.close().catch(() => undefined)
  }
}

/** The id as its caller wrote it: the HTTP API scopes ids as `<tenant>:<id>`, and the tenant is not the caller's to read. */
function publicId(id: string): string {
  const colon = id.indexOf(':')
  return colon >= 0 ? id.slice(colon + 1) : id
}
