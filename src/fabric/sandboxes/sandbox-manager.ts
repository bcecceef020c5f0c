import { randomBytes } from 'node:crypto'
import {
  ExecgateError,
  describeError,
  type AdapterRegistry,
  type CodeExecutionAdapter,
  type ExecutionRequest,
  type ExecutionResult,
  type SecurityPolicy,
} from '../../core'
import type { ExecuteOptions } from '../../execution/types'
import type { Logger } from '../../observability/logger'
import type { WorkspaceLimits } from '../../workspace'
import { LiveSandbox } from './live-sandbox'
import { sandboxLostError } from './lost-sandbox'
import { readSnapshot } from './snapshots'
import { chooseSandboxAdapter, sandboxCapableAdapters, sandboxIdleTimeout, sandboxPolicy, startFiles } from './sandbox-start'
import { MemorySandboxRegistry, type SandboxRegistry } from './sandbox-registry'
import type {
  Sandbox,
  SandboxArtifactStore,
  SandboxUploads,
  SandboxCaller,
  SandboxInfo,
  SandboxService,
  SandboxSettings,
  SandboxStartOptions,
  NodeRecord,
  SandboxRecord,
  SandboxWhereabouts,
} from './sandbox-types'

export interface SandboxManagerOptions {
  registry: AdapterRegistry
  /** The execution service: every exec goes through it (policy, static checks, admission, output cap, listeners). */
  execute(request: ExecutionRequest, options: ExecuteOptions): Promise<ExecutionResult>
  /** The policy a caller starts from: its profile's, else the default. Throws `EXECGATE_PROFILE_UNKNOWN`. */
  basePolicy(profile?: string): SecurityPolicy
  settings: SandboxSettings
  /** What a workspace may hold (`workspace.*`): per file everywhere, in all for backends that keep it in memory. */
  limits: WorkspaceLimits
  /** `routing.tierOrder`, for `adapter: 'auto'`. @default [1, 3, 4, 2, 0] */
  tierOrder?: readonly number[]
  /** Files in from and out to the artifact ledger (src/app/fabric-wiring.ts); without it, those calls answer `EXECGATE_LEDGER_DISABLED`. */
  artifacts?: SandboxArtifactStore
  /** Uploads by digest (`PUT /v1/files`): a `{ sha256 }` file is looked for there first, with the ledger off too. */
  uploads?: SandboxUploads
  /** Where every node finds every sandbox (`fabric.store`: Redis shares it). @default one node's, in memory */
  sandboxRegistry?: SandboxRegistry
  /**
   * Reaches another live node's sandbox as a `Sandbox` of this process (its HTTP API, as the tenant: src/app wires
   * it); without it `find` sees this node's sandboxes only.
   */
  reach?: (record: SandboxRecord, node: NodeRecord & { url: string }, tenant: string) => Promise<Sandbox | undefined>
  /** How often this node says it is alive; it counts as gone after three missed beats. @default 2000 */
  heartbeatMs?: number
  logger?: Logger
  now?: () => number
}

const DEFAULT_TENANT = 'local'

/**
 * The SandboxManager: owns sandbox ids and tenants, the per-tenant cap, idle timeouts, shutdown, and the clean-up of
 * what a crashed execgate left. It reaches backends only through the adapter contract's `sandboxes` capability
 * (`openSandbox`, `sweepSandboxes`), never by an adapter's name. Sandboxes live as long as this process: they are
 * live environments, not durable tasks, and none survives a restart (the next start's sweep removes their remains).
 */
export class SandboxManager implements SandboxService {
  private readonly live = new Map<string, LiveSandbox>()
  /** Starts under way per tenant, counted against the cap before their backend exists. */
  private readonly starting = new Map<string, number>()
  private swept: Promise<number> | undefined
  private closed = false
  private readonly now: () => number
  readonly registry: SandboxRegistry
  /** This node's id in the registry: new for every process, so a restarted node never claims a dead one's sandboxes. */
  readonly nodeId = `node-${randomBytes(6).toString('hex')}`
  private nodeUrl: string | undefined
  private nodeStatus: (() => unknown) | undefined
  private readonly startedAt = new Date().toISOString()
  private beating: NodeJS.Timeout | undefined
  private firstBeat: Promise<void> | undefined

  constructor(private readonly options: SandboxManagerOptions) {
    this.now = options.now ?? Date.now
    this.registry = options.sandboxRegistry ?? new MemorySandboxRegistry()
  }

  private get heartbeatMs(): number {
    return this.options.heartbeatMs ?? 2000
  }

  /** Says this node is alive, with its URL and status, now and every `heartbeatMs` after. */
  private beat(): Promise<void> {
    const node: NodeRecord = {
      id: this.nodeId,
      ...(this.nodeUrl ? { url: this.nodeUrl } : {}),
      startedAt: this.startedAt,
      heartbeatAt: new Date(this.now()).toISOString(),
      status: {
        ...(this.nodeStatus?.() as object | undefined),
        sandboxes: [...this.live.values()].filter((sandbox) => sandbox.live).length,
      },
    }
    return this.registry.heartbeat(node, this.heartbeatMs * 3)
  }

  private alive(): Promise<void> {
    if (!this.firstBeat) {
      this.firstBeat = this.beat()
      this.beating = setInterval(() => {
        this.beat().catch((error) => this.options.logger?.warn({ err: describeError(error) }, 'sandbox registry heartbeat failed'))
      }, this.heartbeatMs)
      this.beating.unref()
    }
    return this.firstBeat
  }

  /**
   * Where other nodes reach this one (`execgate serve` calls it once it listens) and what it shows of itself to every
   * node (GET /v1/adapters's `nodes`); starts the heartbeat.
   */
  async advertise(url: string, status?: () => unknown): Promise<void> {
    this.nodeUrl = url
    this.nodeStatus = status
    this.firstBeat = undefined
    clearInterval(this.beating)
    await this.alive()
  }

  /** Where other nodes reach this node, once `advertise` has said it (`execgate serve`); undefined for a library. */
  get url(): string | undefined {
    return this.nodeUrl
  }

  /** A live node by its heartbeat; undefined when it is gone. */
  node(id: string): Promise<NodeRecord | undefined> {
    return this.registry.node(id)
  }

  /** The registry's record of a live sandbox of this node, as its owner writes it after every call. */
  private recordOf(sandbox: LiveSandbox, state: SandboxRecord['state'] = 'running'): SandboxRecord {
    return { info: { ...sandbox.info(), node: this.nodeId }, node: this.nodeId, state }
  }

  nodes(): Promise<NodeRecord[]> {
    return this.registry.nodes()
  }

  private publish(sandbox: LiveSandbox, state: SandboxRecord['state'] = 'running'): void {
    this.registry
      .put(this.recordOf(sandbox, state))
      .catch((error) => this.options.logger?.warn({ sandbox: sandbox.id, err: describeError(error) }, 'sandbox registry write failed'))
  }

  /**
   * Where the caller's sandbox is: here, on another live node (forward to it), lost with its node, stopped, or
   * missing. Another tenant's sandbox is `missing`, exactly like one that never was.
   */
  async locate(id: string, caller: SandboxCaller = {}): Promise<SandboxWhereabouts> {
    const here = this.get(id, caller)
    if (here) return { kind: 'here', sandbox: here }
    const record = await this.registry.get(id)
    if (!record || record.info.tenant !== this.tenantOf(caller)) return { kind: 'missing' }
    if (record.state === 'stopped' || record.node === this.nodeId) return { kind: 'stopped', record }
    const node = await this.registry.node(record.node)
    return node ? { kind: 'node', record, node } : { kind: 'lost', record }
  }

  async find(id: string, caller: SandboxCaller = {}): Promise<Sandbox | undefined> {
    const where = await this.locate(id, caller)
    if (where.kind === 'here') return where.sandbox
    if (where.kind === 'lost') throw sandboxLostError(where.record)
    if (where.kind !== 'node' || !where.node.url || !this.options.reach) return undefined
    return this.options.reach(where.record, { ...where.node, url: where.node.url }, this.tenantOf(caller))
  }

  /** The caller's sandboxes on every node, this node's fresh; those of a node that is gone say `state: 'lost'`. */
  async listEverywhere(caller: SandboxCaller = {}): Promise<SandboxInfo[]> {
    const local = this.list(caller)
    if (!this.registry.shared) return local
    const seen = new Set(local.map((info) => info.id))
    const live = new Set((await this.registry.nodes()).map((node) => node.id))
    const others = (await this.registry.list(this.tenantOf(caller)))
      .filter((record) => record.state === 'running' && !seen.has(record.info.id))
      .map((record) => ({ ...record.info, state: live.has(record.node) ? ('running' as const) : ('lost' as const) }))
    return [...local, ...others]
  }

  /** Forgets a lost sandbox's record (its tenant's DELETE): its node is gone, so there is nothing else to stop. */
  async forgetLost(id: string, caller: SandboxCaller = {}): Promise<boolean> {
    const where = await this.locate(id, caller)
    if (where.kind !== 'lost') return false
    await this.registry.remove(id)
    return true
  }

  private tenantOf(caller: SandboxCaller = {}): string {
    return caller.tenant ?? DEFAULT_TENANT
  }

  /** Adapters that can host sandboxes, cheapest tier first. */
  private capable(): CodeExecutionAdapter[] {
    return sandboxCapableAdapters(this.options.registry, this.options.tierOrder)
  }

  async start(options: SandboxStartOptions = {}, caller: SandboxCaller = {}): Promise<Sandbox> {
    if (this.closed) throw new ExecgateError('EXECGATE_SHUTTING_DOWN')
    const tenant = this.tenantOf(caller)
    const adapter = chooseSandboxAdapter(this.options.registry, this.options.tierOrder, options.adapter ?? this.options.settings.adapter)
    const policy = sandboxPolicy(
      { ...this.options.basePolicy(caller.profile), filesystem: this.options.settings.filesystem },
      options,
      adapter,
    )
    const idleTimeoutMs = sandboxIdleTimeout(this.options.settings, options.idleTimeoutMs)
    // Read before a backend opens: an unknown artifact costs no container, and answers as GET /v1/artifacts would.
    // A snapshot is read and checked now, restored first once the backend is open, so the start's own files go over it.
    const { maxSnapshotBytes } = this.options.settings
    const restore =
      options.from !== undefined ? await readSnapshot(options.from, tenant, this.options.artifacts, maxSnapshotBytes) : undefined
    const files = await startFiles(options.files ?? [], tenant, this.options.artifacts, this.options.uploads)
    await (this.swept ??= this.sweep())
    // Counted before the backend opens, in the registry (across nodes when it is shared): two starts at once, here or
    // on two nodes, cannot both take the last place.
    const { maxPerTenant } = this.options.settings
    const id = `sb-${randomBytes(10).toString('hex')}`
    await this.alive()
    const at = new Date(this.now()).toISOString()
    const provisional: SandboxRecord = {
      info: {
        id,
        tenant,
        adapter: adapter.name,
        languages: [],
        createdAt: at,
        lastUsedAt: at,
        expiresAt: at,
        idleTimeoutMs,
        execs: 0,
        policy,
      },
      node: this.nodeId,
      state: 'running',
    }
    if (!(await this.registry.claim(provisional, maxPerTenant)))
      throw new ExecgateError('EXECGATE_SANDBOX_LIMIT', { tenant, limit: maxPerTenant })
    this.starting.set(tenant, (this.starting.get(tenant) ?? 0) + 1)
    let opened = false
    try {
      const handle = await adapter.openSandbox!({ id, policy, limits: this.options.limits })
      const sandbox = new LiveSandbox(id, tenant, adapter.name, handle, policy, idleTimeoutMs, {
        execute: (request, executeOptions) => this.options.execute(request, executeOptions),
        stopped: (stopped, reason, error) => this.forget(stopped, reason, error),
        now: this.now,
        maxFileBytes: this.options.limits.maxFileBytes,
        maxSnapshotBytes,
        artifacts: this.options.artifacts,
        ...(this.options.uploads ? { uploads: this.options.uploads } : {}),
        snapshotOn: { stop: this.options.settings.snapshotOnStop, idle: this.options.settings.snapshotOnIdle },
        used: (used) => this.publish(used),
        snapshotTaken: (taken, snapshot) =>
          this.options.logger?.info(
            { sandbox: taken.id, tenant: taken.tenant, snapshot: snapshot.id, reason: snapshot.reason },
            'sandbox snapshot',
          ),
        snapshotFailed: (failed, error) =>
          this.options.logger?.warn(
            { sandbox: failed.id, tenant: failed.tenant, err: describeError(error) },
            'automatic sandbox snapshot failed',
          ),
      })
      this.live.set(id, sandbox)
      try {
        if (restore) await sandbox.restore(restore)
        for (const file of files) await sandbox.writeFile(file.path, file.content)
      } catch (error) {
        await sandbox.stopFor('its files could not be written')
        throw error
      }
      // A shutdown that began while the backend opened finds it here, or it is stopped now.
      if (this.closed) {
        await sandbox.stopFor('execgate is shutting down')
        throw new ExecgateError('EXECGATE_SHUTTING_DOWN')
      }
      this.options.logger?.info(
        { sandbox: id, tenant, adapter: adapter.name, idleTimeoutMs, ...(options.from ? { from: options.from } : {}) },
        'sandbox started',
      )
      this.publish(sandbox)
      opened = true
      return sandbox
    } finally {
      this.starting.set(tenant, (this.starting.get(tenant) ?? 1) - 1)
      if (!opened) await this.registry.remove(id).catch(() => undefined)
    }
  }

  private forget(sandbox: LiveSandbox, reason: string, error?: unknown): void {
    this.live.delete(sandbox.id)
    this.publish(sandbox, 'stopped')
    if (error)
      this.options.logger?.warn(
        { sandbox: sandbox.id, tenant: sandbox.tenant, reason, err: describeError(error) },
        'sandbox stopped; its backend was not closed cleanly (the next start sweeps it)',
      )
    else this.options.logger?.info({ sandbox: sandbox.id, tenant: sandbox.tenant, reason }, 'sandbox stopped')
  }

  get(id: string, caller: SandboxCaller = {}): Sandbox | undefined {
    const sandbox = this.live.get(id)
    return sandbox && sandbox.live && sandbox.tenant === this.tenantOf(caller) ? sandbox : undefined
  }

  list(caller: SandboxCaller = {}): SandboxInfo[] {
    const tenant = this.tenantOf(caller)
    return [...this.live.values()].filter((sandbox) => sandbox.live && sandbox.tenant === tenant).map((sandbox) => sandbox.info())
  }

  async stop(id: string, caller: SandboxCaller = {}): Promise<boolean> {
    const sandbox = this.get(id, caller)
    if (!sandbox) return false
    await sandbox.stop()
    return true
  }

  async sweep(): Promise<number> {
    let removed = 0
    for (const adapter of this.capable()) {
      try {
        removed += (await adapter.sweepSandboxes?.()) ?? 0
      } catch (error) {
        this.options.logger?.warn({ adapter: adapter.name, err: describeError(error) }, 'could not sweep sandboxes a crashed run left')
      }
    }
    if (removed > 0) this.options.logger?.info({ removed }, 'removed sandboxes a crashed execgate left behind')
    return removed
  }

  async stopAll(filter: { tenants?: readonly string[]; reason?: string } = {}): Promise<void> {
    const chosen = [...this.live.values()].filter((sandbox) => !filter.tenants || filter.tenants.includes(sandbox.tenant))
    await Promise.all(chosen.map((sandbox) => sandbox.stopFor(filter.reason ?? 'execgate is shutting down')))
  }

  async close(): Promise<void> {
    this.closed = true
    await this.stopAll()
    clearInterval(this.beating)
    // Said at once, so no other node forwards here in the seconds the heartbeat would take to expire.
    if (this.firstBeat) await this.registry.leave(this.nodeId).catch(() => undefined)
    await this.registry.close().catch(() => undefined)
  }
}
