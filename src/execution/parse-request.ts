import type { ErrorObject } from 'ajv'
import { EXECUTION_REQUEST_SCHEMA, type ExecutionRequest } from '../core'
import { lazyValidator } from '../runtime/lazy-validator'

const validateRequest = lazyValidator<ExecutionRequest>(EXECUTION_REQUEST_SCHEMA)

/** `/policy/memoryMb` → `policy.memoryMb`; `/files/0/path` → `files[0].path`. */
function fieldName(error: ErrorObject): string {
  const parts = error.instancePath.split('/').filter(Boolean)
  if (error.keyword === 'required') parts.push(String(error.params.missingProperty))
  if (error.keyword === 'additionalProperties') parts.push(String(error.params.additionalProperty))
  const name = parts.map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`)).join('')
  return name.startsWith('.') ? name.slice(1) : name || 'request'
}

function describe(error: ErrorObject): string {
  const field = fieldName(error)
  switch (error.keyword) {
    case 'required':
      return `${field} is required`
    case 'additionalProperties':
      return `${field} is not a known field`
    case 'enum':
      return `${field} must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`
    case 'minLength':
      return error.params.limit === 1 ? `${field} must not be empty` : `${field} ${error.message}`
    case 'anyOf':
      return `${field} must be "none" or a list of host names`
    default:
      return `${field} ${error.message ?? 'is invalid'}`
  }
}

/** Checks a request's shape; returns the first problem as a sentence naming the field, or undefined. */
export function findRequestProblem(request: unknown): string | undefined {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return 'the request must be an object'
  if (validateRequest(request)) return undefined
  const errors = validateRequest.errors ?? []
  // anyOf reports its branches first; the anyOf error itself reads best.
  const chosen = errors.find((error) => error.keyword === 'anyOf') ?? errors[0]
  return chosen ? describe(chosen) : 'the request is invalid'
}
