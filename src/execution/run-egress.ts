import { ExecgateError, errorResult, type EgressAccess, type ExecutionResult, type SecurityPolicy } from '../core'
import { scrubSecrets, type EgressGateway, type EgressQuota, type EgressRunHandle } from '../egress'
import type { HostFunctionDefinition } from '../workspace'

/** What a run gets from the egress gateway, and how its record lands in the result. */
export interface RunEgress {
  /** `http_request`, for engines that call host functions. */
  definitions: readonly HostFunctionDefinition[]
  /** The proxy, for OS sandboxes. */
  access?: EgressAccess
  /** Puts the run's egress record in the result and scrubs configured secret values from its output. */
  finish(result: ExecutionResult): ExecutionResult
  close(): void
}

const NONE: RunEgress = { definitions: [], finish: (result) => result, close: () => undefined }

/**
 * Opens a run's egress when its policy allows any network (and the service has a gateway); a rule that does not
 * parse is the caller's `invalid_request`.
 */
export function openRunEgress(
  gateway: EgressGateway | undefined,
  policy: SecurityPolicy,
  /** The run's signal, asked for only when the run gets a way out (making one costs several µs). */
  signal: () => AbortSignal,
  /** Its tenant's egress quotas, live (from admission). */
  quota?: EgressQuota,
): RunEgress | ExecutionResult {
  if (!gateway) return NONE
  const secrets = gateway.secrets
  // No way out and nothing to scrub (most runs): nothing to make for the run.
  if (policy.network === 'none' && secrets.length === 0) return NONE
  const scrub = (result: ExecutionResult): ExecutionResult => {
    if (secrets.length === 0) return result
    result.stdout = scrubSecrets(result.stdout, secrets)
    result.stderr = scrubSecrets(result.stderr, secrets)
    if (result.value !== undefined) {
      const json = JSON.stringify(result.value)
      const clean = scrubSecrets(json, secrets)
      if (clean !== json) result.value = JSON.parse(clean) as ExecutionResult['value']
    }
    if (result.error?.message) result.error.message = scrubSecrets(result.error.message, secrets)
    return result
  }
  if (policy.network === 'none') return { ...NONE, finish: scrub }
  let handle: EgressRunHandle
  try {
    handle = gateway.openRun(policy.network, signal(), quota)
  } catch (error) {
    return errorResult('invalid_request', 'execgate', new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: (error as Error).message }))
  }
  return {
    definitions: [handle.hostFunction],
    access: { endpoint: (placement) => handle.endpoint(placement) },
    finish(result) {
      result.egress = handle.records()
      return scrub(result)
    },
    close: () => handle.close(),
  }
}
