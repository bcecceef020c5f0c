/**
 * One registry of error codes. Inside `execute` errors become results; outside it (config, start-up, host
 * functions) they are thrown as `ExecgateError` with one of these codes, so callers decide from fields, not
 * from parsing messages. docs/errors.md lists every code; a test keeps the two in step.
 */

/** Who is at fault: the caller's input, a backend, or execgate itself. */
export type Fault = 'client' | 'backend' | 'internal'

interface ErrorDefinition {
  readonly fault: Fault
  readonly retryable: boolean
  /** A message template; `{name}` placeholders are filled from the error's params. */
  readonly template: string
}

export const ERROR_CODES = {
  EXECGATE_CONFIG_INVALID: { fault: 'client', retryable: false, template: 'invalid configuration: {detail}' },
  EXECGATE_CONFIG_FILE: { fault: 'client', retryable: false, template: 'cannot read config file {file}: {detail}' },
  EXECGATE_REQUEST_INVALID: { fault: 'client', retryable: false, template: 'invalid request: {detail}' },
  EXECGATE_POLICY_LOOSENED: {
    fault: 'client',
    retryable: false,
    template: 'the request may only tighten the policy: {detail}',
  },
  EXECGATE_POLICY_VIOLATION: { fault: 'client', retryable: false, template: 'policy violation: {detail}' },
  EXECGATE_POLICY_UNENFORCEABLE: {
    fault: 'client',
    retryable: false,
    template: 'the policy requires {limit} to be enforced, and {detail}',
  },
  EXECGATE_FILES_NOT_READABLE: {
    fault: 'client',
    retryable: false,
    template:
      'the request sends files ({files}) that {policy} may not read (filesystem "none", and security.requestFiles is "refuse"); {allow}',
  },
  EXECGATE_FILE_NOT_FOUND: {
    fault: 'client',
    retryable: false,
    template: 'no uploaded file {sha256} for tenant {tenant}: upload it first (PUT /v1/files, or `execgate run --file`)',
  },
  EXECGATE_FILE_QUOTA: {
    fault: 'client',
    retryable: false,
    template:
      'tenant {tenant} has {used} bytes of uploaded files; {bytes} more would pass its quota of {quota} bytes (fabric.files.quotaBytes)',
  },
  EXECGATE_FILE_DIGEST_MISMATCH: {
    fault: 'client',
    retryable: false,
    template: 'the uploaded bytes hash to {actual}, not the {expected} the upload named',
  },
  EXECGATE_PROFILE_UNKNOWN: { fault: 'client', retryable: false, template: 'no policy profile named "{name}"; profiles: {known}' },
  EXECGATE_ADAPTER_UNKNOWN: {
    fault: 'client',
    retryable: false,
    template: 'unknown adapter "{name}"; known adapters: {known}',
  },
  EXECGATE_ADAPTER_UNAVAILABLE: { fault: 'backend', retryable: true, template: 'adapter {name} is unavailable: {detail}' },
  EXECGATE_PACKAGE_UNAVAILABLE: {
    fault: 'backend',
    retryable: false,
    template: 'the code imports {packages}, which no available adapter has: {detail}',
  },
  EXECGATE_DEPENDENCY_MISSING: {
    fault: 'client',
    retryable: false,
    template: '{feature} needs {packages}, which is not installed: run `{install}`',
  },
  EXECGATE_LANGUAGE_UNSUPPORTED: {
    fault: 'client',
    retryable: false,
    template: 'adapter {name} does not run {language}; it runs {languages}',
  },
  EXECGATE_HOST_CALL_UNKNOWN: { fault: 'client', retryable: false, template: 'no host function named "{name}"' },
  EXECGATE_HOST_CALL_BUDGET: { fault: 'client', retryable: false, template: 'host-call budget exceeded: {detail}' },
  EXECGATE_HOST_CALL_DENIED: { fault: 'client', retryable: false, template: 'policy violation: host function {name} refused: {detail}' },
  EXECGATE_HOST_CALL_ARGS: { fault: 'client', retryable: false, template: '{name}: {detail}' },
  EXECGATE_HOST_CALL_FAILED: { fault: 'client', retryable: false, template: '{name} failed: {detail}' },
  EXECGATE_EGRESS_DENIED: { fault: 'client', retryable: false, template: 'network request refused: {detail}' },
  EXECGATE_EGRESS_FAILED: { fault: 'backend', retryable: false, template: 'network request failed: {detail}' },
  EXECGATE_HOST_FUNCTION_INVALID: { fault: 'client', retryable: false, template: 'host function "{name}" cannot be registered: {detail}' },
  EXECGATE_WORKSPACE_PATH: { fault: 'client', retryable: false, template: 'workspace path {path} refused: {reason}' },
  EXECGATE_WORKSPACE_NOT_FOUND: { fault: 'client', retryable: false, template: 'no file "{path}" in the workspace' },
  EXECGATE_WORKSPACE_LIMIT: { fault: 'client', retryable: false, template: 'workspace limit: {detail}' },
  EXECGATE_SESSION_UNKNOWN: { fault: 'client', retryable: false, template: 'no session "{id}" on {adapter}: {detail}' },
  EXECGATE_SESSION_LIMIT: {
    fault: 'client',
    retryable: true,
    template: '{adapter} already holds its limit of {limit} sessions; close one or wait for one to expire',
  },
  EXECGATE_SESSION_LOST: {
    fault: 'backend',
    retryable: false,
    template:
      'session "{id}" is lost: it lived on node {node}, which is gone ({detail}), and its ' +
      '{adapter} state cannot move to another node; the next call with this id starts a new ' +
      'session',
  },
  EXECGATE_SESSION_ELSEWHERE: {
    fault: 'backend',
    retryable: true,
    template: 'session "{id}" lives on node {node} ({url}): {detail}',
  },
  EXECGATE_BACKEND_FAILED: { fault: 'backend', retryable: true, template: 'backend {name} failed: {detail}' },
  EXECGATE_UNAUTHORIZED: { fault: 'client', retryable: false, template: '{detail}' },
  EXECGATE_FORBIDDEN: { fault: 'client', retryable: false, template: '{detail}' },
  EXECGATE_RATE_LIMITED: {
    fault: 'client',
    retryable: true,
    template: 'rate limit of {limit} requests a minute reached for tenant {tenant}; retry in {retryAfter} s',
  },
  EXECGATE_NOT_FOUND: { fault: 'client', retryable: false, template: '{detail}' },
  EXECGATE_TASK_CONFLICT: { fault: 'client', retryable: false, template: 'task {id} is {state} and cannot be {action}' },
  EXECGATE_SUBMIT_REFUSED: {
    fault: 'client',
    retryable: false,
    template: '{subject} was not submitted: {reason}',
  },
  EXECGATE_RESUME_REFUSED: {
    fault: 'client',
    retryable: false,
    template: '{subject} was not resumed and stays SUSPENDED: {reason}',
  },
  EXECGATE_PLAN_CONFLICT: { fault: 'client', retryable: false, template: 'plan {id} is {state} and cannot be {action}' },
  EXECGATE_BODY_TOO_LARGE: { fault: 'client', retryable: false, template: 'the request body is over the {limit}-byte limit' },
  EXECGATE_QUEUE_FULL: {
    fault: 'backend',
    retryable: true,
    template: 'the {lane} queue for {adapter} is full ({limit} waiting); retry in {retryAfter} s',
  },
  EXECGATE_QUEUE_TIMEOUT: {
    fault: 'backend',
    retryable: true,
    template: 'the run never started: it waited {waitedMs} ms in the {lane} queue for {adapter}, past its {boundMs} ms bound',
  },
  EXECGATE_INTERPRETER_WAIT: {
    fault: 'backend',
    retryable: true,
    template: 'the run never started: {reason}, and its {boundMs} ms time limit passed while it waited; retry in a few seconds',
  },
  EXECGATE_QUOTA_EXCEEDED: { fault: 'client', retryable: true, template: 'quota {quota} reached: {detail}; retry in {retryAfter} s' },
  EXECGATE_QUOTA_LIMIT: { fault: 'client', retryable: false, template: 'quota {quota}: {detail}' },
  EXECGATE_AGENT_TYPE_UNKNOWN: { fault: 'client', retryable: false, template: 'no agent type named "{name}"; agent types: {known}' },
  EXECGATE_SHUTTING_DOWN: { fault: 'backend', retryable: true, template: 'the server is shutting down; retry on another instance' },
  EXECGATE_LEDGER_UNAVAILABLE: { fault: 'backend', retryable: true, template: 'the artifact ledger cannot reach its store: {detail}' },
  EXECGATE_LEDGER_DISABLED: { fault: 'client', retryable: false, template: 'the artifact ledger is off (fabric.ledger.enabled is false)' },
  EXECGATE_SANDBOX_LIMIT: {
    fault: 'client',
    retryable: true,
    template:
      'tenant {tenant} already has {limit} live sandboxes (sandboxes.maxPerTenant); stop one, or let one reach its idle timeout, first',
  },
  EXECGATE_SANDBOX_UNSUPPORTED: {
    fault: 'client',
    retryable: false,
    template: 'no sandbox on {name}: {detail}; enabled adapters that host sandboxes: {known}',
  },
  EXECGATE_SANDBOX_STOPPED: { fault: 'client', retryable: false, template: 'sandbox {id} is stopped ({reason}); start a new one' },
  EXECGATE_SANDBOX_LOST: {
    fault: 'backend',
    retryable: false,
    template: 'sandbox {id} is lost: its node {node} is gone ({detail}); {snapshot}',
  },
  EXECGATE_SANDBOX_ELSEWHERE: {
    fault: 'backend',
    retryable: true,
    template: 'sandbox {id} lives on node {node} ({url}), which this node cannot reach now: {detail}',
  },
  EXECGATE_SNAPSHOT_CORRUPT: {
    fault: 'backend',
    retryable: false,
    template: 'snapshot {id} does not match its digest: {detail}; it was not restored',
  },
  EXECGATE_SERVER_UNREACHABLE: { fault: 'backend', retryable: true, template: 'cannot reach the execgate server at {url}: {detail}' },
  EXECGATE_REQUEST_CANCELLED: { fault: 'client', retryable: false, template: 'the request was cancelled: {detail}' },
  EXECGATE_RESPONSE_INVALID: {
    fault: 'backend',
    retryable: false,
    template: 'the server answered HTTP {status} with a body that is not execgate JSON: {detail}',
  },
  EXECGATE_CLI_USAGE: { fault: 'client', retryable: false, template: '{detail}' },
  EXECGATE_INTERNAL: { fault: 'internal', retryable: false, template: 'internal error: {detail}' },
} as const satisfies Record<string, ErrorDefinition>

export type ErrorCode = keyof typeof ERROR_CODES

export class ExecgateError extends Error {
  readonly code: ErrorCode
  readonly fault: Fault
  readonly retryable: boolean
  readonly params: Readonly<Record<string, string>>

  constructor(code: ErrorCode, params: Record<string, string | number> = {}, options?: { cause?: unknown; source?: string }) {
    const definition: ErrorDefinition = ERROR_CODES[code]
    const stringParams = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)]))
    const text = definition.template.replace(/\{(\w+)\}/g, (_, key: string) => stringParams[key] ?? `{${key}}`)
    const prefix = options?.source ? `[execgate] [${options.source}] ` : '[execgate] '
    super(prefix + text, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ExecgateError'
    this.code = code
    this.fault = definition.fault
    this.retryable = definition.retryable
    this.params = stringParams
  }
}

/** Checks by code, not `instanceof`, so errors crossing package or realm boundaries still match. */
export function isExecgateError(value: unknown, code?: ErrorCode): value is ExecgateError {
  if (typeof value !== 'object' || value === null) return false
  const candidate = value as { code?: unknown }
  if (typeof candidate.code !== 'string' || !(candidate.code in ERROR_CODES)) return false
  return code === undefined || candidate.code === code
}

/** A one-line description of anything thrown, for results and logs (never a stack for users). */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message || error.name
  if (typeof error === 'string') return error
  try {
    return JSON.stringify(error) ?? String(error)
  } catch {
    return String(error)
  }
}

/** Host-call errors that end the run (`policy_violation`) instead of being raised inside the sandboxed code. */
export function isFatalHostError(error: unknown): error is ExecgateError {
  return isExecgateError(error, 'EXECGATE_HOST_CALL_BUDGET') || isExecgateError(error, 'EXECGATE_HOST_CALL_DENIED')
}

/** The Python exception a failed host call raises inside the code, the same on every Python adapter. */
export function pythonExceptionFor(error: unknown): 'FileNotFoundError' | 'PermissionError' | 'TypeError' | 'OSError' | 'RuntimeError' {
  if (isExecgateError(error, 'EXECGATE_WORKSPACE_NOT_FOUND')) return 'FileNotFoundError'
  if (isExecgateError(error, 'EXECGATE_WORKSPACE_PATH')) return 'PermissionError'
  if (isExecgateError(error, 'EXECGATE_HOST_CALL_ARGS') || isExecgateError(error, 'EXECGATE_HOST_CALL_UNKNOWN')) return 'TypeError'
  if (isExecgateError(error, 'EXECGATE_WORKSPACE_LIMIT')) return 'OSError'
  return 'RuntimeError'
}
