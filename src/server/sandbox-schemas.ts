import type { ErrorObject } from 'ajv'
import { LANES, LANGUAGES, POLICY_OVERRIDES_SCHEMA, WORKSPACE_FILE_SCHEMA } from '../core'
import { lazyValidator } from '../runtime/lazy-validator'

/** JSON Schemas of the sandbox routes' bodies: the server validates with them and the OpenAPI document shows them. */

const positiveInt = { type: 'integer', minimum: 1 } as const

/**
 * A workspace file: its content, or `{ path, sha256 }`, the tenant's upload (PUT /v1/files) or an artifact of the
 * ledger it can read (one or the other). */
export const SANDBOX_FILE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['path'],
  properties: {
    ...WORKSPACE_FILE_SCHEMA.properties,
    sha256: {
      type: 'string',
      pattern: '^(sha256:)?[0-9a-fA-F]{64}$',
      description: "an artifact's digest, read from the ledger instead of content",
    },
  },
} as const

export const SANDBOX_SAVE_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: ['path'],
  properties: { path: { type: 'string', minLength: 1, maxLength: 1024, description: 'the workspace file to store in the ledger' } },
} as const

export const SANDBOX_START_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    adapter: { type: 'string', minLength: 1, description: 'docker, process or shell; default: config sandboxes.adapter' },
    policy: POLICY_OVERRIDES_SCHEMA,
    timeoutMs: positiveInt,
    memoryMb: positiveInt,
    idleTimeoutMs: positiveInt,
    files: { type: 'array', items: SANDBOX_FILE_SCHEMA },
    from: {
      type: 'string',
      pattern: '^(sha256:)?[0-9a-fA-F]{64}$',
      description: "a snapshot's id: the workspace is restored from it (verified by digest) before files are written",
    },
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
    files: { type: 'array', items: SANDBOX_FILE_SCHEMA },
    traceId: { type: 'string', minLength: 1, maxLength: 128 },
    lane: { enum: [...LANES] },
    priority: { type: 'integer', minimum: -1000, maximum: 1000 },
  },
} as const

/** What a snapshot answers (`SandboxSnapshot`). */
export const SANDBOX_SNAPSHOT_SCHEMA = {
  type: 'object',
  required: ['id', 'sandboxId', 'adapter', 'files', 'bytes', 'createdAt', 'reason'],
  properties: {
    id: { type: 'string', description: "the archive's SHA-256: what POST /v1/sandboxes takes as from" },
    sandboxId: { type: 'string' },
    adapter: { type: 'string' },
    files: { type: 'integer' },
    bytes: { type: 'integer', description: "the archive's size" },
    createdAt: { type: 'string', format: 'date-time' },
    reason: { enum: ['requested', 'stop', 'idle'] },
    skipped: { type: 'array', items: { type: 'string' }, description: 'paths the backend could not read and left out' },
  },
} as const

const validators = {
  start: lazyValidator(SANDBOX_START_SCHEMA),
  exec: lazyValidator(SANDBOX_EXEC_SCHEMA),
  save: lazyValidator(SANDBOX_SAVE_SCHEMA),
}

function describe(error: ErrorObject): string {
  const parts = error.instancePath.split('/').filter(Boolean)
  if (error.keyword === 'additionalProperties') parts.push(String(error.params.additionalProperty))
  const field =
    parts
      .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
      .join('')
      .replace(/^\./, '') || 'the body'
  if (error.keyword === 'additionalProperties') return `${field} is not a known field`
  if (error.keyword === 'enum') return `${field} must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`
  return `${field} ${error.message ?? 'is invalid'}`
}

/** The first problem of a start or exec body, as a sentence naming the field, or undefined. */
export function sandboxBodyProblem(kind: keyof typeof validators, body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body must be a JSON object'
  const validate = validators[kind]
  if (!validate(body)) return describe(validate.errors![0]!)
  const files = (body as { files?: { content?: unknown; sha256?: unknown }[] }).files ?? []
  const index = files.findIndex((file) => (file.content === undefined) === (file.sha256 === undefined))
  return index === -1 ? undefined : `files[${index}] needs either content or sha256 (an upload's or an artifact's digest), not both`
}

/** The sandbox routes for the OpenAPI document (src/server/openapi.ts), with the error responses every route shares. */
export function sandboxOpenApiPaths(errorResponses: Record<string, unknown>): Record<string, unknown> {
  const id = { name: 'id', in: 'path', required: true, schema: { type: 'string' } }
  const file = { name: 'path', in: 'path', required: true, schema: { type: 'string' }, description: 'a workspace path; may contain /' }
  const notFound = { '404': { description: 'no such sandbox (or file) for this tenant' } }
  const json = (schema: object) => ({ required: true, content: { 'application/json': { schema } } })
  return {
    '/v1/sandboxes': {
      post: {
        summary: 'Start a persistent sandbox (docs/sandboxes.md)',
        requestBody: json(SANDBOX_START_SCHEMA),
        responses: { '201': { description: 'the SandboxInfo' }, ...errorResponses },
      },
      get: { summary: "The tenant's live sandboxes", responses: { '200': { description: '{ sandboxes: SandboxInfo[] }' } } },
    },
    '/v1/sandboxes/{id}': {
      get: {
        summary: 'A sandbox: adapter, languages, times, execs, policy',
        parameters: [id],
        responses: { '200': { description: 'the SandboxInfo' }, ...notFound },
      },
      delete: {
        summary: 'Stop a sandbox and free what it holds',
        parameters: [id],
        responses: { '204': { description: 'stopped' }, ...notFound },
      },
    },
    '/v1/sandboxes/{id}/exec': {
      post: {
        summary:
          'Run a command (or a program) in the sandbox; with Accept: text/event-stream, ' +
          'stdout/stderr events as produced and the result last',
        parameters: [id],
        requestBody: json(SANDBOX_EXEC_SCHEMA),
        responses: {
          '200': {
            description: 'the ExecutionResult, whatever its status',
            content: { 'application/json': { schema: { $ref: '#/components/schemas/ExecutionResult' } }, 'text/event-stream': {} },
          },
          ...notFound,
          ...errorResponses,
        },
      },
    },
    '/v1/sandboxes/{id}/artifacts': {
      post: {
        summary:
          'Save a file to the artifact ledger, recorded as generated by the sandbox (GET ' +
          '/v1/artifacts/{sha256} then serves it to the tenant)',
        parameters: [id],
        requestBody: json(SANDBOX_SAVE_SCHEMA),
        responses: {
          '201': { description: '{ path, sha256, size, mediaType }' },
          ...notFound,
          '501': { description: 'the ledger is off (fabric.ledger.enabled)' },
          ...errorResponses,
        },
      },
    },
    '/v1/sandboxes/{id}/snapshots': {
      post: {
        summary:
          "Snapshot the sandbox's workspace: a tar named by its SHA-256 in the ledger's blob store, " +
          'recorded with the sandbox as its source; POST /v1/sandboxes with from restores it on any node',
        parameters: [id],
        responses: {
          '201': {
            description: 'the SandboxSnapshot',
            content: { 'application/json': { schema: SANDBOX_SNAPSHOT_SCHEMA } },
          },
          ...notFound,
          '501': { description: 'the ledger is off (fabric.ledger.enabled)' },
          ...errorResponses,
        },
      },
    },
    '/v1/sandboxes/{id}/files': {
      get: {
        summary: "The sandbox's files",
        parameters: [id],
        responses: { '200': { description: '{ files: [{ path, size }] }' }, ...notFound },
      },
    },
    '/v1/sandboxes/{id}/files/{path}': {
      put: {
        summary:
          "Write a file: the body is its bytes; or, with ?sha256= and no body, the tenant's upload, else its artifact from the ledger",
        parameters: [
          id,
          file,
          {
            name: 'sha256',
            in: 'query',
            required: false,
            schema: { type: 'string' },
            description: "an artifact's digest (404 unless one of the tenant's records names it)",
          },
        ],
        requestBody: { required: false, content: { 'application/octet-stream': {} } },
        responses: { '204': { description: 'written' }, ...notFound, ...errorResponses },
      },
      get: {
        summary: "A file's bytes",
        parameters: [id, file],
        responses: { '200': { description: 'the bytes', content: { 'application/octet-stream': {} } }, ...notFound },
      },
      delete: { summary: 'Delete a file', parameters: [id, file], responses: { '204': { description: 'deleted' }, ...notFound } },
    },
  }
}
