import { FILESYSTEM_ACCESS, LANES, LANGUAGES, POLICY_LIMITS } from './types'

/**
 * JSON Schema of `ExecutionRequest`, shared by the library's request check, the HTTP API and the OpenAPI
 * document, so the three can never disagree about what a valid request is.
 */

const positiveInt = { type: 'integer', minimum: 1 } as const

export const POLICY_OVERRIDES_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    wallTimeMs: positiveInt,
    cpuTimeMs: positiveInt,
    memoryMb: positiveInt,
    outputBytes: positiveInt,
    maxProcesses: positiveInt,
    maxOutputs: { type: 'integer', minimum: 0 },
    outputsBytes: { type: 'integer', minimum: 0 },
    network: {
      anyOf: [{ const: 'none' }, { type: 'array', items: { type: 'string', minLength: 1 } }],
    },
    filesystem: { enum: [...FILESYSTEM_ACCESS] },
    allowedImports: { type: 'array', items: { type: 'string', minLength: 1 } },
    hostCalls: {
      type: 'object',
      additionalProperties: false,
      properties: { maxCount: { type: 'integer', minimum: 0 }, maxTotalMs: { type: 'integer', minimum: 0 } },
    },
    required: { type: 'array', items: { enum: [...POLICY_LIMITS] } },
  },
} as const

/** Every field of a resolved `SecurityPolicy` (the override schema's properties are the same names). */
export const SECURITY_POLICY_FIELDS = Object.keys(POLICY_OVERRIDES_SCHEMA.properties) as (keyof typeof POLICY_OVERRIDES_SCHEMA.properties)[]

export const WORKSPACE_FILE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['path', 'content'],
  properties: {
    path: { type: 'string', minLength: 1, maxLength: 1024 },
    content: { type: 'string' },
    encoding: { enum: ['utf8', 'base64'] },
  },
} as const

/** A file named by the digest of an upload (`PUT /v1/files`) instead of its content. */
export const FILE_REFERENCE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['path', 'sha256'],
  properties: {
    path: { type: 'string', minLength: 1, maxLength: 1024 },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
  },
} as const

export const EXECUTION_REQUEST_SCHEMA = {
  $id: 'ExecutionRequest',
  type: 'object',
  additionalProperties: false,
  required: ['language', 'code'],
  properties: {
    language: { enum: [...LANGUAGES] },
    code: { type: 'string', minLength: 1 },
    stdin: { type: 'string' },
    files: { type: 'array', items: { oneOf: [WORKSPACE_FILE_SCHEMA, FILE_REFERENCE_SCHEMA] } },
    sessionId: { type: 'string', minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.:-]+$' },
    adapter: { type: 'string', minLength: 1 },
    timeoutMs: positiveInt,
    memoryMb: positiveInt,
    policy: POLICY_OVERRIDES_SCHEMA,
    traceId: { type: 'string', minLength: 1, maxLength: 128 },
    lane: { enum: [...LANES] },
    priority: { type: 'integer', minimum: -1000, maximum: 1000 },
    agentType: { type: 'string', minLength: 1, maxLength: 64 },
    maxQueueMs: { type: 'integer', minimum: 0 },
    outputs: { type: 'object', additionalProperties: false, properties: { imageFormat: { enum: ['png', 'svg'] } } },
  },
} as const
