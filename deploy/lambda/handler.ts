import { createExecgate, resolvePolicy, type Execgate } from '../../src'
import { EXECUTION_STATUSES, createResult, type ExecutionRequest, type ExecutionResult, type SecurityPolicy } from '../../src/core'

/**
 * The Lambda function execgate ships: runs one request with execgate's own in-process adapters (QuickJS for
 * JavaScript and TypeScript, monty for Python; pyodide too when EXECGATE_EXECUTION_ENABLED lists it) and returns
 * the ExecutionResult. The caller sends the policy it resolved; the function runs under it only if it is no looser
 * than the function's own configured default (config and EXECGATE_* environment variables), so a caller can never
 * buy more than the deployment allows.
 */

export interface LambdaEvent {
  request: ExecutionRequest
  /** The caller's resolved policy; tightened against the function's own. */
  policy?: Partial<SecurityPolicy>
  /** An availability probe: answered at once, nothing runs. */
  ping?: boolean
}

let instance: Promise<Execgate> | undefined

/** One execgate per container, created on the first invocation and reused while the container is warm. */
function execgate(): Promise<Execgate> {
  instance ??= createExecgate({
    overrides: {
      execution: { enabled: (process.env.EXECGATE_EXECUTION_ENABLED ?? 'quickjs,monty').split(',') },
      readiness: { enabled: false },
      adapters: { pyodide: { warmOnStart: false } },
      // The caller's execgate records the run (with its tenant); a Lambda's filesystem is read-only besides.
      fabric: { ledger: { enabled: false } },
    },
  })
  return instance
}

export async function execute(event: LambdaEvent): Promise<ExecutionResult | { pong: true }> {
  if (event?.ping) return { pong: true }
  if (!event || typeof event !== 'object' || typeof event.request !== 'object' || event.request === null) {
    return createResult('invalid_request', 'lambda', {
      message: '[execgate] [lambda] the event must be {"request": ExecutionRequest, "policy"?: SecurityPolicy}',
    })
  }
  const gate = await execgate()
  const functionPolicy = (await import('../../src/policy')).policyFromConfig(gate.config)
  // The sent policy may only tighten the function's own, exactly as a request tightens a caller's.
  const resolution = event.policy
    ? resolvePolicy(functionPolicy, { policy: event.policy as ExecutionRequest['policy'] })
    : { policy: functionPolicy }
  if (!resolution.policy) {
    return createResult('policy_violation', 'lambda', {
      message: `[execgate] [lambda] the policy sent is looser than this function allows: ${resolution.loosening?.message ?? ''}`,
    })
  }
  const { adapter: _ignored, ...request } = event.request
  const result = await gate.execute(request, { basePolicy: resolution.policy })
  if (!EXECUTION_STATUSES.includes(result.status))
    return createResult('internal_error', 'lambda', { message: '[execgate] [lambda] the function produced no valid result' })
  return result
}

/** Releases this container's execgate. Lambda freezes containers instead; tests and local runs call this. */
export async function shutdown(): Promise<void> {
  const current = instance
  instance = undefined
  await (await current)?.dispose()
}
