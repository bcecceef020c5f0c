import type { ErrorObject, ValidateFunction } from 'ajv'

/** A JSON-schema check with Ajv's shape (call it, then read `errors`), compiled the first time it is called. */
export interface LazyValidator<T> {
  (value: unknown): value is T
  readonly errors: ErrorObject[] | null | undefined
}

/**
 * Why lazily: compiling the request, task, plan and sandbox schemas when their modules loaded cost ~200 ms of
 * `execgate serve`'s start on this machine (of a 1.5 s budget to /readyz), for checks most processes never make
 * (a server that is never sent a plan) or make only at the first request. Each validator has its own Ajv, as before:
 * the schemas carry `$id`s and nest each other (a task holds a request), which one shared Ajv would refuse.
 */
export function lazyValidator<T>(schema: object): LazyValidator<T> {
  let compiled: ValidateFunction<T> | undefined
  const compile = (): ValidateFunction<T> => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- Ajv itself loaded on the first check, not at start-up
    const { default: Ajv } = require('ajv') as typeof import('ajv')
    return new Ajv({ allErrors: false, strict: false }).compile<T>(schema)
  }
  const validate = (value: unknown): value is T => (compiled ??= compile())(value)
  return Object.defineProperty(validate, 'errors', { get: () => compiled?.errors }) as LazyValidator<T>
}
