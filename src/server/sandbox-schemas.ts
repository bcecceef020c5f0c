import Ajv, { type ErrorObject } from 'ajv'
import { LANES, LANGUAGES, POLICY_OVERRIDES_SCHEMA, WORKSPACE_FILE_SCHEMA } from '../core'

/** JSON Schemas of the sandbox routes' bodies: the server validates with them and the OpenAPI document shows them. */

const positiveInt = { type: 'integer', minimum: 1 } as const

export const SANDBOX_START_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    adapter: { type: 'string', minLength: 1, description: 'docker, process or shell; default: config sandboxes.adapter' },
    policy: POLICY_OVERRIDES_SCHEMA,
    timeoutMs: positiveInt,
    memoryMb: positiveInt,
    idleTimeoutMs: positiveInt,
    files: { type: 'array', items: WORKSPACE_FILE_SCHEMA },
  },
} as const

export const SANDBOX_EXEC_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    command: { type: 'string', minLength: 1, description: 'a bash command line; or language and code' },
    language: { enum: [...LANGUAGES] },
    code: { type: 'string', minLength: 1 },
    stdin: { type: 'string' },
    timeoutMs: positiveInt,
    memoryMb: positiveInt,
    policy: POLICY_OVERRIDES_SCHEMA,
    files: { type: 'array', items: WORKSPACE_FILE_SCHEMA },
    traceId: { type: 'string', minLength: 1, maxLength: 128 },
    lane: { enum: [...LANES] },
    priority: { type: 'integer', minimum: -1000, maximum: 1000 },
  },
} as const

const ajv = new Ajv({ allErrors: false, strict: false })
const validators = { start: ajv.compile(SANDBOX_START_SCHEMA), exec: ajv.compile(SANDBOX_EXEC_SCHEMA) }

function describe(error: ErrorObject): string {
  const parts = error.instancePath.split('/').filter(Boolean)
  if (error.keyword === 'additionalProperties') parts.push(String(error.params.additionalProperty))
  const field = parts.map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`)).join('').replace(/^\./, '') || 'the body'
  if (error.keyword === 'additionalProperties') return `${field} is not a known field`
  if (error.keyword === 'enum') return `${field} must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`
  return `${field} ${error.message ?? 'is invalid'}`
}

/** The first problem of a start or exec body, as a sentence naming the field, or undefined. */
export function sandboxBodyProblem(kind: keyof typeof validators, body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body must be a JSON object'
  const validate = validators[kind]
  if (validate(body)) return undefined
  return describe(validate.errors![0]!)
}
