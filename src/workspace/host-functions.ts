import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv'
import { performance } from 'node:perf_hooks'
import type { HostFunctionSpec, HostFunctions } from '../core/adapter'
import { ExecgateError, describeError, isExecgateError } from '../core/errors'
import type { HostCallRecord, SecurityPolicy } from '../core/types'
import type { Workspace } from './types'

/** What a host function's handler gets besides its arguments. */
export interface HostCall {
  /** The run's workspace (an empty in-memory one when the caller gave none). */
  readonly workspace: Workspace
  readonly policy: SecurityPolicy
  /** Aborted when the call passes the host-call time budget or the run ends; long handlers should stop. */
  readonly signal: AbortSignal
  /** Stores the run's result value (`submit_result`); the last call wins. */
  submit(value: unknown): void
  /** Marks a workspace path written, so the result lists it in `files`. */
  wrote(path: string): void
}

/** A host function: its spec (name, description, JSON schema of the argument list) and its handler. */
export interface HostFunctionDefinition extends HostFunctionSpec {
  /** Workspace access the function needs; the policy's `filesystem` must grant it, or the run ends `policy_violation`. */
  access?: 'read' | 'write'
  handler(args: unknown[], call: HostCall): unknown
}

/** Names sandboxed code can call: identifiers in both JavaScript and Python. */
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/
const ajv = new Ajv({ strict: false, allErrors: false })
const compiled = new WeakMap<object, ValidateFunction>()
/**
 * Equal schemas share one validator: a definition built per run (a new `parameters` object each time) compiles once
 * (~1.5 ms a compile), and ajv, which keeps every schema object it compiled, keeps one copy instead of one a run.
 */
const compiledByText = new Map<string, ValidateFunction>()

/** Checks a definition before any run uses it; throws `EXECGATE_HOST_FUNCTION_INVALID` naming the field. */
export function checkHostFunctionDefinition(definition: HostFunctionDefinition): void {
  const invalid = (detail: string) => new ExecgateError('EXECGATE_HOST_FUNCTION_INVALID', { name: String(definition?.name), detail })
  if (typeof definition?.name !== 'string' || !NAME.test(definition.name))
    throw invalid('name must be an identifier of letters, digits and _ (at most 64)')
  if (typeof definition.handler !== 'function') throw invalid('handler must be a function')
  if (typeof definition.parameters !== 'object' || definition.parameters === null)
    throw invalid('parameters must be a JSON schema object for the argument list')
  if (definition.access !== undefined && definition.access !== 'read' && definition.access !== 'write')
    throw invalid('access must be "read" or "write"')
  try {
    validatorFor(definition)
  } catch (error) {
    throw invalid(`parameters is not a valid JSON schema: ${describeError(error)}`)
  }
}

function validatorFor(definition: HostFunctionDefinition): ValidateFunction {
  let validate = compiled.get(definition.parameters)
  if (!validate) {
    const text = JSON.stringify(definition.parameters)
    validate = compiledByText.get(text)
    if (!validate) compiledByText.set(text, (validate = ajv.compile(definition.parameters)))
    compiled.set(definition.parameters, validate)
  }
  return validate
}

/** `/0` → `argument 1`; `/1/name` → `argument 2 .name`. */
function describeArgumentError(error: ErrorObject): string {
  const [index, ...rest] = error.instancePath.split('/').filter(Boolean)
  const where = index === undefined ? 'the arguments' : `argument ${Number(index) + 1}${rest.length ? ` (.${rest.join('.')})` : ''}`
  if (error.keyword === 'maxItems') return `takes at most ${error.params.limit} argument(s)`
  if (error.keyword === 'minItems') return `needs at least ${error.params.limit} argument(s)`
  return `${where} ${error.message ?? 'is invalid'}`
}

export interface RunHostFunctionsOptions {
  policy: SecurityPolicy
  workspace: Workspace
  /** Aborted when the run ends; calls still in flight see their signal abort. */
  signal?: AbortSignal
}

/**
 * The host functions of one run: every call is checked against its schema and the policy's filesystem access,
 * counted and timed against the host-call budget, and recorded for the result's action log.
 */
export class RunHostFunctions implements HostFunctions {
  private readonly byName = new Map<string, HostFunctionDefinition>()
  private offered: readonly HostFunctionSpec[]
  readonly records: HostCallRecord[] = []
  readonly written = new Set<string>()
  private spentMs = 0
  private submission?: { value: unknown }

  constructor(
    definitions: readonly HostFunctionDefinition[],
    private readonly options: RunHostFunctionsOptions,
  ) {
    for (const definition of definitions) this.byName.set(definition.name, definition)
    this.offered = [...this.byName.values()].map(({ name, description, parameters }) => ({ name, description, parameters }))
  }

  /**
   * Offers only the functions the code names. Installing a function costs a little on every run, and monty's fast
   * inline path is only for runs without host functions; code cannot call a function it never names.
   */
  forCode(code: string, implicit: readonly string[] = []): this {
    this.offered = this.offered.filter((spec) => code.includes(spec.name) || implicit.includes(spec.name))
    return this
  }

  list(): readonly HostFunctionSpec[] {
    return this.offered
  }

  has(name: string): boolean {
    return this.offered.some((spec) => spec.name === name)
  }

  /** The value given to `submit_result`, if the code called it. */
  get submitted(): { value: unknown } | undefined {
    return this.submission
  }

  async call(name: string, args: readonly unknown[]): Promise<unknown> {
    const definition = this.has(name) ? this.byName.get(name) : undefined
    if (!definition) throw this.record(name, 0, new ExecgateError('EXECGATE_HOST_CALL_UNKNOWN', { name }))
    const { policy } = this.options
    if (this.records.length >= policy.hostCalls.maxCount) {
      throw this.record(
        name,
        0,
        new ExecgateError('EXECGATE_HOST_CALL_BUDGET', { detail: `the policy allows ${policy.hostCalls.maxCount} host calls per run` }),
      )
    }
    const denied = this.accessDenied(definition)
    if (denied) throw this.record(name, 0, new ExecgateError('EXECGATE_HOST_CALL_DENIED', { name, detail: denied }))
    const validate = validatorFor(definition)
    if (!validate([...args]))
      throw this.record(
        name,
        0,
        new ExecgateError('EXECGATE_HOST_CALL_ARGS', { name, detail: describeArgumentError(validate.errors![0]!) }),
      )
    const remainingMs = policy.hostCalls.maxTotalMs - this.spentMs
    if (remainingMs <= 0) throw this.record(name, 0, this.timeBudgetError())
    return this.invoke(definition, [...args], remainingMs)
  }

  private accessDenied(definition: HostFunctionDefinition): string | undefined {
    const access = this.options.policy.filesystem
    if (definition.access === 'read' && access === 'none') return `it reads the workspace, and the policy's filesystem access is "none"`
    if (definition.access === 'write' && access !== 'sandboxed')
      return `it writes the workspace, and the policy's filesystem access is "${access}" (writes need "sandboxed")`
    return undefined
  }

  private timeBudgetError(): ExecgateError {
    return new ExecgateError('EXECGATE_HOST_CALL_BUDGET', {
      detail: `host calls used the policy's ${this.options.policy.hostCalls.maxTotalMs} ms`,
    })
  }

  private async invoke(definition: HostFunctionDefinition, args: unknown[], remainingMs: number): Promise<unknown> {
    const controller = new AbortController()
    const onRunEnd = () => controller.abort()
    this.options.signal?.addEventListener('abort', onRunEnd, { once: true })
    const call: HostCall = {
      workspace: this.options.workspace,
      policy: this.options.policy,
      signal: controller.signal,
      submit: (value) => {
        this.submission = { value }
      },
      wrote: (path) => this.written.add(path),
    }
    const started = performance.now()
    let timer: NodeJS.Timeout | undefined
    try {
      const outOfTime = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          controller.abort()
          reject(this.timeBudgetError())
        }, remainingMs)
      })
      const value = await Promise.race([Promise.resolve().then(() => definition.handler(args, call)), outOfTime])
      const json = value === undefined ? null : JSON.parse(JSON.stringify(value) ?? 'null')
      this.record(definition.name, performance.now() - started)
      return json
    } catch (error) {
      const known = isExecgateError(error)
        ? error
        : new ExecgateError('EXECGATE_HOST_CALL_FAILED', { name: definition.name, detail: describeError(error) }, { cause: error })
      throw this.record(definition.name, performance.now() - started, known)
    } finally {
      clearTimeout(timer)
      this.options.signal?.removeEventListener('abort', onRunEnd)
    }
  }

  /** Adds a call to the action log and its time to the budget; returns the error, for `throw this.record(…)`. */
  private record(name: string, durationMs: number, error?: ExecgateError): ExecgateError {
    this.spentMs += durationMs
    this.records.push({ name, ok: !error, durationMs: Math.round(durationMs * 1000) / 1000, ...(error ? { error: error.message } : {}) })
    return error!
  }
}
