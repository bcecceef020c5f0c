import { ExecgateError, type CodeExecutionAdapter, type ExecutionRequest, type SecurityPolicy, type Tier } from '../core'
import type { AdapterRegistry, RouteDecision, Router } from '../tokens'

/** Cheapest first: in-process, WebAssembly module, OS sandbox, remote service; the placeholder last. */
export const DEFAULT_TIER_ORDER: readonly Tier[] = [1, 3, 4, 2, 0]

/**
 * Routing by configuration: a pinned adapter (the request's, else `execution.adapter`), or with `auto` the
 * cheapest enabled adapter that runs the language.
 */
export class ConfigRouter implements Router {
  constructor(
    private readonly registry: AdapterRegistry,
    private readonly configuredAdapter: string,
  ) {}

  select(request: ExecutionRequest, _policy: SecurityPolicy): RouteDecision {
    const pinned = request.adapter ?? (this.configuredAdapter === 'auto' ? undefined : this.configuredAdapter)
    if (pinned) {
      const adapter = this.registry.get(pinned)
      if (!adapter) {
        const known = this.registry.list().map((item) => item.name).join(', ')
        return { refusal: { status: 'invalid_request', error: new ExecgateError('EXECGATE_ADAPTER_UNKNOWN', { name: pinned, known: `${known} (enabled)` }) } }
      }
      if (!adapter.supportedLanguages().includes(request.language)) {
        const error = new ExecgateError('EXECGATE_LANGUAGE_UNSUPPORTED', { name: pinned, language: request.language, languages: adapter.supportedLanguages().join(', ') })
        return { refusal: { status: 'invalid_request', error } }
      }
      return { adapter, reason: request.adapter ? 'pinned by the request' : 'pinned by execution.adapter' }
    }
    const capable = this.capable(request)
    let escalatedFrom: { adapter: string; reason: string } | undefined
    for (const candidate of capable) {
      const verdict = candidate.canRun?.(request.code, request.language)
      if (verdict && !verdict.ok) {
        escalatedFrom ??= { adapter: candidate.name, reason: verdict.reason ?? 'it cannot run this code' }
        continue
      }
      if (escalatedFrom) {
        return { adapter: candidate, reason: `escalated from ${escalatedFrom.adapter}: ${escalatedFrom.reason}`, escalatedFrom: escalatedFrom.adapter }
      }
      return { adapter: candidate, reason: `cheapest enabled adapter for ${request.language}` }
    }
    const detail = escalatedFrom ? `${escalatedFrom.adapter} cannot run it (${escalatedFrom.reason}) and no other enabled adapter runs ${request.language}` : `no enabled adapter runs ${request.language}`
    return { refusal: { status: 'unavailable', error: new ExecgateError('EXECGATE_ADAPTER_UNAVAILABLE', { name: 'any', detail }) } }
  }

  /** Enabled adapters that run the language, cheapest tier first. */
  private capable(request: ExecutionRequest): CodeExecutionAdapter[] {
    const capable = this.registry.list().filter((adapter) => adapter.supportedLanguages().includes(request.language))
    return capable.sort((a, b) => DEFAULT_TIER_ORDER.indexOf(a.capabilities.tier) - DEFAULT_TIER_ORDER.indexOf(b.capabilities.tier))
  }
}
