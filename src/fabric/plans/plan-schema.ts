import type { ErrorObject } from 'ajv'
import { LANGUAGES } from '../../core'
import { lazyValidator } from '../../runtime/lazy-validator'
import { PLAN_WORKSPACE_KINDS, type PlanSpec, type PlanStepSpec } from './plan-types'

/**
 * JSON Schema of a submitted plan (`PlanSpec`) and of one step, shared by the library, the HTTP API, the CLI and the
 * reflector's replies, so every way in agrees on what a valid plan is; then the graph rules a schema cannot say:
 * unique ids, known dependencies, no cycle.
 */

/** Step ids become workspace folders (`steps/<id>/`) and parts of task ids, so they stay plain. */
export const STEP_ID_PATTERN = '^[A-Za-z0-9_-]{1,64}$'

/** Code of one step, at most (a plan is code an agent or a person wrote, not a data carrier). */
export const MAX_STEP_CODE_BYTES = 256 * 1024

const STEP_SHAPE = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'language', 'code'],
  properties: {
    id: { type: 'string', pattern: STEP_ID_PATTERN },
    description: { type: 'string', maxLength: 2000 },
    language: { enum: [...LANGUAGES] },
    code: { type: 'string', minLength: 1, maxLength: MAX_STEP_CODE_BYTES },
    dependsOn: { type: 'array', maxItems: 100, items: { type: 'string', pattern: STEP_ID_PATTERN } },
    // Uploads by digest only (PUT /v1/files): a step names its data, it does not carry it.
    files: {
      type: 'array',
      maxItems: 100,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['path', 'sha256'],
        properties: {
          path: { type: 'string', minLength: 1, maxLength: 1024 },
          sha256: { type: 'string', pattern: '^(sha256:)?[0-9a-f]{64}$' },
        },
      },
    },
    limits: {
      type: 'object',
      additionalProperties: false,
      properties: {
        timeoutMs: { type: 'integer', minimum: 1 },
        memoryMb: { type: 'integer', minimum: 1 },
        outputBytes: { type: 'integer', minimum: 1 },
        maxAttempts: { type: 'integer', minimum: 1, maximum: 10 },
      },
    },
  },
} as const

export const PLAN_STEP_SCHEMA = { $id: 'PlanStep', ...STEP_SHAPE } as const

export const PLAN_SPEC_SCHEMA = {
  $id: 'PlanSpec',
  type: 'object',
  additionalProperties: false,
  required: ['steps'],
  properties: {
    goal: { type: 'string', maxLength: 4000 },
    steps: { type: 'array', minItems: 1, items: STEP_SHAPE },
    maxRevisions: { type: 'integer', minimum: 0, maximum: 100 },
    priority: { type: 'integer', minimum: -1_000_000, maximum: 1_000_000 },
    lane: { enum: ['interactive', 'batch'] },
    workspace: { enum: [...PLAN_WORKSPACE_KINDS] },
  },
} as const

const validatePlan = lazyValidator<PlanSpec>(PLAN_SPEC_SCHEMA)
const validateStep = lazyValidator<PlanStepSpec>(PLAN_STEP_SCHEMA)

function fieldName(error: ErrorObject, root: string): string {
  const parts = error.instancePath.split('/').filter(Boolean)
  if (error.keyword === 'required') parts.push(String(error.params.missingProperty))
  if (error.keyword === 'additionalProperties') parts.push(String(error.params.additionalProperty))
  const name = parts.map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`)).join('')
  return name.startsWith('.') ? name.slice(1) : name || root
}

function describe(error: ErrorObject | undefined, root: string): string {
  if (!error) return `the ${root} is invalid`
  const field = fieldName(error, root)
  if (error.keyword === 'required') return `${field} is required`
  if (error.keyword === 'additionalProperties') return `${field} is not a known field`
  if (error.keyword === 'enum') return `${field} must be one of: ${(error.params.allowedValues as unknown[]).join(', ')}`
  return `${field} ${error.message ?? 'is invalid'}`
}

/** A dependency cycle among the steps, named `a -> b -> a`; undefined when there is none. */
export function findStepCycle(steps: readonly Pick<PlanStepSpec, 'id' | 'dependsOn'>[]): string[] | undefined {
  const dependsOn = new Map(steps.map((step) => [step.id, step.dependsOn ?? []]))
  const state = new Map<string, 'visiting' | 'done'>()
  const trail: string[] = []
  const visit = (id: string): string[] | undefined => {
    if (state.get(id) === 'done') return undefined
    if (state.get(id) === 'visiting') return [...trail.slice(trail.indexOf(id)), id]
    state.set(id, 'visiting')
    trail.push(id)
    for (const next of dependsOn.get(id) ?? []) {
      const cycle = dependsOn.has(next) ? visit(next) : undefined
      if (cycle) return cycle
    }
    trail.pop()
    state.set(id, 'done')
    return undefined
  }
  for (const id of dependsOn.keys()) {
    const cycle = visit(id)
    if (cycle) return cycle
  }
  return undefined
}

/** The graph rules: ids unique, every dependency a step of the plan, no step depending on itself or around a loop. */
export function findGraphProblem(steps: readonly Pick<PlanStepSpec, 'id' | 'dependsOn'>[]): string | undefined {
  const ids = new Set<string>()
  for (const step of steps) {
    if (ids.has(step.id)) return `step id "${step.id}" appears twice`
    ids.add(step.id)
  }
  for (const step of steps) {
    const unknown = (step.dependsOn ?? []).find((id) => !ids.has(id))
    if (unknown) return `unknown dependency: step "${step.id}" depends on "${unknown}", which is not a step of the plan`
  }
  const cycle = findStepCycle(steps)
  return cycle ? `dependency cycle: ${cycle.join(' -> ')}` : undefined
}

/** The first problem with one step's shape, naming the field; undefined when it is valid. */
export function findStepProblem(step: unknown): string | undefined {
  if (typeof step !== 'object' || step === null || Array.isArray(step)) return 'a step must be an object'
  return validateStep(step) ? undefined : describe(validateStep.errors?.[0], 'step')
}

/** The first problem with a submitted plan, as a sentence naming the field or the steps; undefined when valid. */
export function findPlanProblem(spec: unknown, bounds: { maxSteps: number; maxRevisions: number; bucket?: boolean }): string | undefined {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) return 'the plan must be an object'
  if (!validatePlan(spec)) return describe(validatePlan.errors?.[0], 'plan')
  const plan = spec as PlanSpec
  if (plan.steps.length > bounds.maxSteps)
    return `the plan has ${plan.steps.length} steps; at most ${bounds.maxSteps} are allowed (fabric.plans.maxSteps)`
  if (plan.maxRevisions !== undefined && plan.maxRevisions > bounds.maxRevisions) {
    return (
      `maxRevisions ${plan.maxRevisions} is above the allowed ${bounds.maxRevisions} ` +
      `(fabric.plans.maxRevisions); a plan may only lower it`
    )
  }
  if (plan.workspace === 's3' && !bounds.bucket)
    return 'workspace "s3" needs a bucket, and fabric.s3.bucket is empty (EXECGATE_FABRIC_S3_BUCKET)'
  return findGraphProblem(plan.steps)
}
