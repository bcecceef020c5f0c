import type { ErrorObject } from 'ajv'
import { EXECUTION_REQUEST_SCHEMA } from '../../core'
import { lazyValidator } from '../../runtime/lazy-validator'
import { RETRYABLE_FAILURES, type TaskSpec } from './task-types'

/**
 * JSON Schema of a submitted task (`TaskSpec`), shared by the library, the HTTP API and the CLI, in the style of
 * src/core/request-schema.ts: one schema, so the interfaces cannot disagree about what a valid task is.
 */

const ID_PATTERN = '^[A-Za-z0-9_.:-]{1,128}$'

export const TASK_SPEC_SCHEMA = {
  $id: 'TaskSpec',
  type: 'object',
  additionalProperties: false,
  required: ['request'],
  properties: {
    id: { type: 'string', pattern: ID_PATTERN },
    request: EXECUTION_REQUEST_SCHEMA,
    intentId: { type: 'string', minLength: 1, maxLength: 128 },
    priority: { type: 'integer', minimum: -1_000_000, maximum: 1_000_000 },
    deadline: { type: 'string', minLength: 1 },
    requirements: {
      type: 'object',
      additionalProperties: false,
      properties: {
        compute: { type: 'number', exclusiveMinimum: 0 },
        memoryBytes: { type: 'integer', minimum: 1 },
        network: { type: 'boolean' },
      },
    },
    dependencies: { type: 'array', maxItems: 1000, items: { type: 'string', pattern: ID_PATTERN } },
    // Relative folders of plain names: no `..`, no leading `/`, nothing the workspace would refuse.
    dependencyPaths: {
      type: 'object',
      maxProperties: 1000,
      propertyNames: { pattern: ID_PATTERN },
      additionalProperties: { type: 'string', pattern: '^(?!.*(^|/)\\.{1,2}(/|$))[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+){0,7}$', maxLength: 256 },
    },
    timeoutMs: { type: 'integer', minimum: 1 },
    retryPolicy: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxAttempts: { type: 'integer', minimum: 1, maximum: 100 },
        backoff: { enum: ['exponential', 'linear'] },
        baseDelayMs: { type: 'integer', minimum: 0 },
        maxDelayMs: { type: 'integer', minimum: 0 },
        jitter: { type: 'boolean' },
        retryOn: { type: 'array', items: { enum: [...RETRYABLE_FAILURES] } },
      },
    },
    idempotencyKey: { type: 'string', minLength: 1, maxLength: 256 },
    lane: { enum: ['interactive', 'batch'] },
    provenance: {
      type: 'object',
      additionalProperties: false,
      properties: {
        planId: { type: 'string', pattern: ID_PATTERN },
        planVersion: { type: 'integer', minimum: 1 },
        stepId: { type: 'string', pattern: ID_PATTERN },
      },
    },
  },
} as const

const validateSpec = lazyValidator<TaskSpec>(TASK_SPEC_SCHEMA)

function fieldName(error: ErrorObject): string {
  const parts = error.instancePath.split('/').filter(Boolean)
  if (error.keyword === 'required') parts.push(String(error.params.missingProperty))
  if (error.keyword === 'additionalProperties') parts.push(String(error.params.additionalProperty))
  const name = parts.map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`)).join('')
  return name.startsWith('.') ? name.slice(1) : name || 'task'
}

/** The first problem with a submitted task, as a sentence naming the field; undefined when it is valid. */
export function findTaskProblem(spec: unknown): string | undefined {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) return 'the task must be an object'
  if (!validateSpec(spec)) {
    const error = validateSpec.errors?.find((item) => item.keyword === 'anyOf') ?? validateSpec.errors?.[0]
    if (!error) return 'the task is invalid'
    const field = fieldName(error)
    if (error.keyword === 'required') return `${field} is required`
    if (error.keyword === 'additionalProperties') return `${field} is not a known field`
    if (error.keyword === 'enum') return `${field} must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`
    return `${field} ${error.message ?? 'is invalid'}`
  }
  const task = spec as TaskSpec
  if (task.deadline !== undefined && !/^\d{4}-\d{2}-\d{2}T/.test(task.deadline))
    return `deadline must be an ISO 8601 date-time, got "${task.deadline}"`
  if (task.deadline !== undefined && Number.isNaN(Date.parse(task.deadline))) return `deadline is not a valid date-time: "${task.deadline}"`
  const unlisted = Object.keys(task.dependencyPaths ?? {}).find((id) => !(task.dependencies ?? []).includes(id))
  if (unlisted) return `dependencyPaths names "${unlisted}", which is not in dependencies`
  const folders = Object.values(task.dependencyPaths ?? {})
  const shared = folders.find((folder, index) => folders.indexOf(folder) !== index)
  if (shared) return `dependencyPaths gives two dependencies the same folder "${shared}"`
  const policy = task.retryPolicy
  if (policy?.baseDelayMs !== undefined && policy.maxDelayMs !== undefined && policy.maxDelayMs < policy.baseDelayMs)
    return 'retryPolicy.maxDelayMs must be at least retryPolicy.baseDelayMs'
  return undefined
}
