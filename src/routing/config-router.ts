import {
  ExecgateError,
  type AdapterRegistry,
  type CodeExecutionAdapter,
  type ExecutionRequest,
  type ExecutionResult,
  type PolicyLimit,
  type RunNeeds,
  type SecurityPolicy,
  type Tier,
  inlineFiles,
} from '../core'
import type { RouteDecision, RouteHints, Router } from './router'
import type { CircuitBreakers } from '../readiness/circuit-breaker'
import { PACKAGE_PROVIDERS, describePackages, missingPackages, neededPackages } from './package-needs'

/** Cheapest first: in-process, WebAssembly module, OS sandbox, remote service; the placeholder last. */
export const DEFAULT_TIER_ORDER: readonly Tier[] = [1, 3, 4, 2, 0]

/** The adapter the readiness monitor has bound as active (undefined: cheapest capable, `auto`). */
export interface ActiveBindingSource {
  active(): string | undefined
}

/** Health as routing needs it: whether an adapter may be sent work, and whether it is degraded. */
export interface HealthSource {
  usable(name: string): boolean
  /** `latencyMs`: how long the adapter's last readiness check (a trivial run) took. */
  get(name: string): { state: string; reason?: string; latencyMs?: number }
}

export interface RouterOptions {
  registry: AdapterRegistry
  /** `execution.adapter`: a name, or `auto`. Used when no active binding is given. */
  configuredAdapter: string
  /** `execution.fallback`: the reroute chain; empty for the routing order. */
  fallbackChain?: readonly string[]
  tierOrder?: readonly Tier[]
  binding?: ActiveBindingSource
  health?: HealthSource
  breakers?: CircuitBreakers
}

/** Features a request needs from an adapter, read from the request itself. */
function neededFeatures(request: ExecutionRequest, policy: SecurityPolicy): Array<'sessions' | 'workspace' | 'network'> {
  const needs: Array<'sessions' | 'workspace' | 'network'> = []
  if (request.sessionId) needs.push('sessions')
  if (request.files?.length) needs.push('workspace')
  if (policy.network !== 'none') needs.push('network')
  return needs
}

/** Bytes a run starts with: its files, its stdin and the caller's workspace. */
export function inputBytes(request: ExecutionRequest, hints: RouteHints = {}): number {
  const files = inlineFiles(request.files).reduce(
    (sum, file) => sum + (file.encoding === 'base64' ? Math.floor((file.content.length * 3) / 4) : Buffer.byteLength(file.content)),
    0,
  )
  return files + (request.stdin ? Buffer.byteLength(request.stdin) : 0) + (hints.workspaceBytes ?? 0)
}

/** The first required limit the adapter cannot enforce at all, if any. */
export function unenforcedRequirement(adapter: CodeExecutionAdapter, policy: SecurityPolicy): PolicyLimit | undefined {
  return policy.required.find((limit) => adapter.capabilities.enforcement[limit] === 'none')
}

/**
 * Routing (step 4 of one execution, docs/architecture.md). A pinned adapter — the request's, else the readiness
 * monitor's active binding, else
 * `execution.adapter` — runs the request if it can; otherwise the cheapest adapter (by `routing.tierOrder`) that
 * runs the language, offers the features the request needs, is not known to be unavailable, has its breaker
 * closed, and can enforce every `required` limit. Degraded adapters come after healthy ones of any tier.
 */
export class ConfigRouter implements Router {
  private readonly options: Required<Pick<RouterOptions, 'fallbackChain' | 'tierOrder'>> & RouterOptions

  constructor(registry: AdapterRegistry, configuredAdapter: string, options: Omit<RouterOptions, 'registry' | 'configuredAdapter'> = {}) {
    this.options = { fallbackChain: [], tierOrder: DEFAULT_TIER_ORDER, ...options, registry, configuredAdapter }
  }

  select(request: ExecutionRequest, policy: SecurityPolicy, hints: RouteHints = {}): RouteDecision {
    const { registry } = this.options
    if (request.adapter) return this.pinned(request.adapter, request, policy, 'pinned by the request')
    const bound = this.options.binding
      ? this.options.binding.active()
      : this.options.configuredAdapter === 'auto'
        ? undefined
        : this.options.configuredAdapter
    if (bound) {
      const adapter = registry.get(bound)
      const source =
        bound === this.options.configuredAdapter ? 'pinned by execution.adapter' : 'the active adapter (switched by the readiness monitor)'
      // The bound adapter gives way to routing only when it is known to be down, or too slow for the caller's
      // budget while another can answer; a language it does not run is the caller's configuration, reported as such.
      if (adapter && this.usable(adapter) && this.tooSlow(adapter, hints)) {
        const faster = this.auto(request, policy, [bound], hints)
        if (faster.adapter && !this.tooSlow(faster.adapter, hints))
          return { ...faster, skipped: { adapter: bound, reason: this.whyTooSlow(adapter, hints) } }
      }
      if (!adapter || this.usable(adapter)) return this.pinned(bound, request, policy, source)
      const decision = this.auto(request, policy, [bound], hints)
      if (decision.adapter) decision.skipped = { adapter: bound, reason: this.whyUnusable(adapter) }
      return decision
    }
    return this.auto(request, policy, [], hints)
  }

  fallback(request: ExecutionRequest, policy: SecurityPolicy, tried: readonly string[]): RouteDecision | undefined {
    if (request.adapter) return undefined // the caller asked for that adapter and no other
    const chain =
      this.options.fallbackChain.length > 0
        ? this.options.fallbackChain.map((name) => this.options.registry.get(name)).filter((item): item is CodeExecutionAdapter => !!item)
        : this.ordered(request)
    const next = chain.find(
      (adapter) =>
        !tried.includes(adapter.name) &&
        this.fits(adapter, request, policy) &&
        this.usable(adapter) &&
        !unenforcedRequirement(adapter, policy),
    )
    return next ? { adapter: next, reason: `fallback after ${tried.join(', ')} failed` } : undefined
  }

  /** Records how a backend did, for its breaker. Only backend failures count against it. */
  observe(adapterName: string, result: ExecutionResult): void {
    const breakers = this.options.breakers
    if (!breakers) return
    const backendFailed = result.status === 'unavailable' || (result.status === 'internal_error' && result.adapter === adapterName)
    if (backendFailed) breakers.failure(adapterName)
    else breakers.success(adapterName)
  }

  /** Marks a request as sent (a half-open breaker lets exactly one through). */
  dispatched(adapterName: string): void {
    this.options.breakers?.dispatched(adapterName)
  }

  private pinned(name: string, request: ExecutionRequest, policy: SecurityPolicy, reason: string): RouteDecision {
    const adapter = this.options.registry.get(name)
    if (!adapter) {
      const known = this.options.registry
        .list()
        .map((item) => item.name)
        .join(', ')
      return {
        refusal: { status: 'invalid_request', error: new ExecgateError('EXECGATE_ADAPTER_UNKNOWN', { name, known: `${known} (enabled)` }) },
      }
    }
    if (!adapter.supportedLanguages().includes(request.language)) {
      const error = new ExecgateError('EXECGATE_LANGUAGE_UNSUPPORTED', {
        name,
        language: request.language,
        languages: adapter.supportedLanguages().join(', '),
      })
      return { refusal: { status: 'invalid_request', error } }
    }
    const limit = unenforcedRequirement(adapter, policy)
    if (limit) {
      return {
        refusal: {
          status: 'policy_violation',
          error: new ExecgateError('EXECGATE_POLICY_UNENFORCEABLE', { limit, detail: `${name} does not enforce it` }),
        },
      }
    }
    const lacking = missingPackages(adapter, request)
    if (lacking.length > 0) {
      const error = new ExecgateError('EXECGATE_PACKAGE_UNAVAILABLE', {
        packages: describePackages(lacking),
        detail: `${name} (${reason}) does not have ${lacking.join(', ')}; ${PACKAGE_PROVIDERS}`,
      })
      return { refusal: { status: 'unavailable', error } }
    }
    return { adapter, reason }
  }

  private auto(request: ExecutionRequest, policy: SecurityPolicy, exclude: readonly string[], hints: RouteHints = {}): RouteDecision {
    const packages = neededPackages(request)
    const capable = this.ordered(request).filter((adapter) => !exclude.includes(adapter.name) && this.fits(adapter, request, policy))
    const enforcing = capable.filter((adapter) => !unenforcedRequirement(adapter, policy))
    const usable = enforcing.filter((adapter) => this.usable(adapter))
    // Healthy before degraded, each in tier order; under a latency budget, the adapters known to answer in time first.
    usable.sort(
      (a, b) => Number(this.degraded(a)) - Number(this.degraded(b)) || Number(this.tooSlow(a, hints)) - Number(this.tooSlow(b, hints)),
    )
    let escalatedFrom: { adapter: string; reason: string } | undefined
    const needs = {
      session: request.sessionId !== undefined,
      hostFunctions: hints.hostFunctions ?? false,
      inputBytes: inputBytes(request, hints),
    }
    const runnable = (adapter: CodeExecutionAdapter) => adapter.canRun?.(request.code, request.language, needs) ?? { ok: true }
    for (const candidate of usable) {
      const verdict = runnable(candidate)
      if (!verdict.ok) {
        escalatedFrom ??= { adapter: candidate.name, reason: verdict.reason ?? 'it cannot run this code' }
        continue
      }
      const byCost = this.byEstimate(candidate, usable, request, needs, hints, runnable)
      if (byCost) return byCost
      // A cheaper adapter passed over because it is down, its breaker is open or it is too slow for the budget is
      // reported as where we came from.
      const cheaper = enforcing.slice(0, enforcing.indexOf(candidate))
      const down = cheaper.find((adapter) => !usable.includes(adapter))
      const slow = cheaper.find((adapter) => usable.includes(adapter) && this.tooSlow(adapter, hints))
      const skipped = down
        ? { adapter: down.name, reason: this.whyUnusable(down) }
        : slow
          ? { adapter: slow.name, reason: this.whyTooSlow(slow, hints) }
          : undefined
      if (slow && !escalatedFrom && !down)
        return { adapter: candidate, reason: `faster than ${slow.name} for a ${hints.latencyBudgetMs} ms budget`, skipped }
      if (escalatedFrom)
        return {
          adapter: candidate,
          reason: `escalated from ${escalatedFrom.adapter}: ${escalatedFrom.reason}`,
          escalatedFrom: escalatedFrom.adapter,
          skipped,
        }
      const imported = packages.length > 0 ? ` with ${packages.join(', ')}` : ''
      return { adapter: candidate, reason: `cheapest available adapter for ${request.language}${imported}`, skipped }
    }
    if (capable.length === 0 && packages.length > 0) {
      const withLanguage = this.ordered(request).filter((adapter) => !exclude.includes(adapter.name))
      const lacking = [...new Set(withLanguage.flatMap((adapter) => missingPackages(adapter, request)))]
      if (lacking.length > 0) {
        const holdings = withLanguage.map((adapter) => `${adapter.name} has ${adapter.capabilities.packages?.join(', ') || 'none of them'}`)
        const detail = `${holdings.join('; ') || `no enabled adapter runs ${request.language}`}; ${PACKAGE_PROVIDERS}`
        return {
          refusal: {
            status: 'unavailable',
            error: new ExecgateError('EXECGATE_PACKAGE_UNAVAILABLE', { packages: describePackages(lacking), detail }),
          },
        }
      }
    }
    if (capable.length > 0 && enforcing.length === 0) {
      const limits = [...new Set(capable.map((adapter) => unenforcedRequirement(adapter, policy)!))]
      return {
        refusal: {
          status: 'policy_violation',
          error: new ExecgateError('EXECGATE_POLICY_UNENFORCEABLE', {
            limit: limits.join(', '),
            detail: `no enabled adapter for ${request.language} enforces it (${capable.map((adapter) => adapter.name).join(', ')} cannot)`,
          }),
        },
      }
    }
    let detail: string
    if (escalatedFrom)
      detail = `${escalatedFrom.adapter} cannot run it (${escalatedFrom.reason}) and no other available adapter runs ${request.language}`
    else if (enforcing.length > 0) detail = enforcing.map((adapter) => `${adapter.name}: ${this.whyUnusable(adapter)}`).join('; ')
    else {
      const needs = neededFeatures(request, policy)
      detail = `no enabled adapter runs ${request.language}${needs.length ? ` with ${needs.join(', ')}` : ''}`
    }
    return { refusal: { status: 'unavailable', error: new ExecgateError('EXECGATE_ADAPTER_UNAVAILABLE', { name: 'any', detail }) } }
  }

  /**
   * When the chosen adapter and a later one of the same health both estimate their cost, the lower estimate wins:
   * an in-process interpreter is cheap to start and slow per byte, an OS sandbox the reverse (docs/adapters/shell.md).
   */
  private byEstimate(
    chosen: CodeExecutionAdapter,
    usable: readonly CodeExecutionAdapter[],
    request: ExecutionRequest,
    needs: RunNeeds,
    hints: RouteHints,
    runnable: (adapter: CodeExecutionAdapter) => { ok: boolean },
  ): RouteDecision | undefined {
    const chosenMs = chosen.estimateMs?.(request.code, request.language, needs)
    if (chosenMs === undefined) return undefined
    const peers = usable
      .slice(usable.indexOf(chosen) + 1)
      .filter((adapter) => adapter.estimateMs && this.degraded(adapter) === this.degraded(chosen) && !this.tooSlow(adapter, hints))
    let best: { adapter: CodeExecutionAdapter; ms: number } | undefined
    for (const peer of peers) {
      const ms = peer.estimateMs!(request.code, request.language, needs)
      if (ms !== undefined && ms < chosenMs && (!best || ms < best.ms) && runnable(peer).ok) best = { adapter: peer, ms }
    }
    if (!best) return undefined
    const kib = Math.round((needs.inputBytes ?? 0) / 1024)
    return {
      adapter: best.adapter,
      reason:
        `estimated faster: ${best.ms.toFixed(1)} ms on ${best.adapter.name} against ` +
        `${chosenMs.toFixed(1)} ms on ${chosen.name} for ${kib} KiB of input`,
    }
  }

  /** Enabled adapters that run the language, in tier order. */
  private ordered(request: ExecutionRequest): CodeExecutionAdapter[] {
    const order = this.options.tierOrder
    const rank = (adapter: CodeExecutionAdapter) =>
      order.includes(adapter.capabilities.tier) ? order.indexOf(adapter.capabilities.tier) : order.length
    return this.options.registry
      .list()
      .filter((adapter) => adapter.supportedLanguages().includes(request.language))
      .sort((a, b) => rank(a) - rank(b))
  }

  /** Runs the language, offers the features the request needs, and has every data package the code imports. */
  private fits(adapter: CodeExecutionAdapter, request: ExecutionRequest, policy: SecurityPolicy): boolean {
    return (
      adapter.supportedLanguages().includes(request.language) &&
      neededFeatures(request, policy).every((feature) => adapter.capabilities[feature]) &&
      missingPackages(adapter, request).length === 0
    )
  }

  private usable(adapter: CodeExecutionAdapter): boolean {
    const healthy = this.options.health?.usable(adapter.name) ?? true
    return healthy && (this.options.breakers?.allows(adapter.name) ?? true)
  }

  /**
   * Known to take longer than the caller can wait: its last readiness check did, or it is still warming up (a run
   * would wait for the warm-up: seconds for pyodide). The first tier (in-process interpreters) warms in a fraction of
   * a second, so only a slower tier's warm-up counts. Unknown latency of a warm adapter is not slow.
   */
  private tooSlow(adapter: CodeExecutionAdapter, hints: RouteHints): boolean {
    if (hints.latencyBudgetMs === undefined) return false
    if (this.warmingSlowly(adapter)) return true
    const latencyMs = this.options.health?.get(adapter.name).latencyMs
    return latencyMs !== undefined && latencyMs > hints.latencyBudgetMs
  }

  private warmingSlowly(adapter: CodeExecutionAdapter): boolean {
    return adapter.capabilities.tier > 1 && adapter.isWarm?.() === false
  }

  private whyTooSlow(adapter: CodeExecutionAdapter, hints: RouteHints): string {
    if (this.warmingSlowly(adapter))
      return `it is still warming up, and a run would wait for that past the caller's ${hints.latencyBudgetMs} ms latency budget`
    const latencyMs = this.options.health?.get(adapter.name).latencyMs ?? 0
    return `its last readiness check took ${Math.round(latencyMs)} ms, over the caller's ${hints.latencyBudgetMs} ms latency budget`
  }

  private degraded(adapter: CodeExecutionAdapter): boolean {
    return this.options.health?.get(adapter.name).state === 'degraded'
  }

  private whyUnusable(adapter: CodeExecutionAdapter): string {
    const health = this.options.health?.get(adapter.name)
    if (health?.state === 'unavailable') return `unavailable${health.reason ? `: ${health.reason}` : ''}`
    if (this.options.breakers && !this.options.breakers.allows(adapter.name)) return `circuit breaker open after repeated backend failures`
    return 'not usable'
  }
}
