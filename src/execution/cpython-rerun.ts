import { describeError, type CodeExecutionAdapter, type ExecutionRequest, type ExecutionResult, type SecurityPolicy } from '../core'
import type { Router } from '../routing/router'
import type { ExecuteOptions } from './types'

export interface RerunInputs {
  request: ExecutionRequest
  policy: SecurityPolicy
  options: ExecuteOptions
  router: Router
  /** Adapters this request has run on so far (the subset interpreter among them). */
  tried: readonly string[]
  /** Runs the request on another adapter with the same deadline, host and output cap (the service's step 5–6). */
  runOn(adapter: CodeExecutionAdapter): Promise<ExecutionResult>
}

/**
 * A language-subset interpreter (monty) answers `error` for some correct programs (`int + bool`, slice assignment,
 * `enumerate(start=)`, …: docs/adapters/monty.md). When nothing of that run can be seen outside it, the same
 * request runs again on the next adapter for the language (pyodide: CPython) and that answer is the result, so
 * the user gets CPython's answer. Returns undefined when the first result stands.
 *
 * Safe to run again only when the first run had no effect: not a session (its state would be half-updated), no
 * host call made (each may have acted: an LLM asked, a file written), no file written, and no output or rich output
 * already streamed to the caller (it would see two runs' output). Pinned requests are never rerun (router.fallback
 * offers nothing for them). The rerun shares the request's deadline, so the time limit still holds overall.
 */
export async function rerunOnFullLanguage(
  first: ExecutionResult,
  adapter: CodeExecutionAdapter,
  inputs: RerunInputs,
): Promise<ExecutionResult | undefined> {
  const { request, options } = inputs
  if (first.status !== 'error' || !adapter.capabilities.languageSubset) return undefined
  if (request.sessionId !== undefined || first.hostCalls?.length || first.files?.length) return undefined
  // An embedder's own host functions keep no record of calls here: we cannot tell that none was made.
  if (options.hostFunctions) return undefined
  if (options.onOutput && (first.stdout || first.stderr)) return undefined
  if (options.onRichOutput && first.outputs?.length) return undefined
  const next = inputs.router.fallback?.(inputs.request, inputs.policy, inputs.tried)?.adapter
  // Only a full implementation of the language: not another subset, not the placeholder (tier 0) that runs nothing.
  if (!next || next.capabilities.languageSubset || next.capabilities.tier === 0) return undefined
  const why = `${adapter.name} answered ${describeFailure(first)}`
  inputs.router.dispatched?.(next.name)
  const second = await inputs.runOn(next)
  inputs.router.observe?.(next.name, second)
  // A backend failure on the rerun tells the user nothing about their code: the first answer stands.
  if (second.status === 'unavailable' || second.status === 'internal_error') return undefined
  second.route = { reason: `rerun on ${next.name} after ${why}`, rerunFrom: adapter.name }
  second.fallbackFrom = { adapter: adapter.name, reason: why }
  return second
}

function describeFailure(result: ExecutionResult): string {
  const error = result.error
  return error ? `${error.type}: ${error.message}` : describeError(result.message ?? result.status)
}
