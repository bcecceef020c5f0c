import { describeError, type LlmProvider } from '../../core'
import type { Task } from '../tasks'
import { findStepProblem } from './plan-schema'
import { STEP_INPUT_ROOT } from './plan-steps'
import type { PlanStepRecord, PlanStepSpec } from './plan-types'

/**
 * The reflector: a language model (Bedrock Converse in production) that turns a failed step into a revised plan for
 * the steps not yet completed. This file owns its prompt and the reply format, and reads replies defensively: a
 * reply is text from a model, so anything in it may be missing, extra or malformed, and each flaw is named.
 */

/** What the reflector is shown about the plan when a step failed. */
export interface RevisionContext {
  goal?: string
  version: number
  steps: readonly PlanStepRecord[]
  /** The failed step first, then any other step that failed while the plan was paused. */
  failed: readonly { step: PlanStepRecord; task: Task }[]
  completed: readonly { step: PlanStepRecord; task: Task }[]
  /** Why earlier replies in this round were refused, oldest first. */
  refusals: readonly string[]
  /** Modules the steps may import (the caller's policy). */
  allowedImports: readonly string[]
}

export type RevisionReply = { steps: PlanStepSpec[]; note?: string; problem?: undefined } | { problem: string; steps?: undefined }

/** Output shown per stream or value; the tail is kept, where the error usually is. */
const SHOWN_BYTES = 2000

function tail(text: string | undefined, bytes = SHOWN_BYTES): string {
  if (!text) return '(empty)'
  return text.length <= bytes ? text : `…${text.slice(text.length - bytes)}`
}

function fenced(text: string): string {
  return '```\n' + text.replace(/```/g, '`\u200b``') + '\n```'
}

function systemPrompt(allowedImports: readonly string[]): string {
  return [
    'You repair plans of code steps that execgate runs in sandboxes. A plan is a DAG of steps; each step runs alone in a fresh sandbox.',
    'How a step works:',
    `- It reads what each step it depends on produced: ${STEP_INPUT_ROOT}/<id>/value.json ` +
      `(the JSON of that step's value) and ${STEP_INPUT_ROOT}/<id>/files/<path> (files it ` +
      `wrote).`,
    `  JavaScript/TypeScript: JSON.parse(await read_file('${STEP_INPUT_ROOT}/a/value.json')). ` +
      `Python: json.loads(read_file('${STEP_INPUT_ROOT}/a/value.json')). bash: cat ` +
      `${STEP_INPUT_ROOT}/a/value.json.`,
    '- Its value is the value of its last expression (or what it passes to ' +
      'submit_result(value)); write_file(path, text) writes a file its dependents see. A bash ' +
      "step's output is its stdout and the files it writes.",
    `- Imports allowed: ${allowedImports.length ? allowedImports.join(', ') : 'none'}. No ` +
      `network. No eval, exec, compile, Function constructors or dynamic imports.`,
    'Languages: python, javascript, typescript, bash.',
    'Answer with one JSON object and nothing else:',
    '{"note": "what you changed and why, in one sentence", "steps": [{"id": "b", "description": ' +
      '"...", "language": "python", "code": "...", "dependsOn": ["a"], "limits": ' +
      '{"timeoutMs": 5000}}]}',
    'Rules for "steps":',
    '- List every step that has not completed: the failed one fixed, the others unchanged or ' +
      'changed as needed. You may add steps and leave steps out.',
    '- Completed steps keep their results: depend on them by id. List a completed step only to run it again with other code.',
    '- Step ids: letters, digits, _ and -. dependsOn names steps of the plan; no cycles. limits ' +
      '(optional): timeoutMs, memoryMb, outputBytes, maxAttempts.',
  ].join('\n')
}

function stepLine(step: PlanStepRecord): string {
  const { taskId: _taskId, digest: _digest, reusedFrom: _reused, ...spec } = step
  return JSON.stringify(spec)
}

function userMessage(context: RevisionContext): string {
  const [first, ...others] = context.failed
  const failure = ({ step, task }: { step: PlanStepRecord; task: Task }) => [
    `Failed step "${step.id}" (${step.language})${step.description ? `: ${step.description}` : ''}`,
    'Code:',
    fenced(step.code),
    `Why it failed: ${task.reason}`,
    ...(task.result?.error
      ? [
          `Exception: ${task.result.error.type}: ` +
            `${task.result.error.message}${task.result.error.line ? ` (line ${task.result.error.line})` : ''}`,
        ]
      : []),
    `stdout (end): ${tail(task.result?.stdout)}`,
    `stderr (end): ${tail(task.result?.stderr)}`,
  ]
  const lines = [
    ...(context.goal ? [`Goal of the plan: ${context.goal}`] : []),
    `Plan version ${context.version}, its steps:`,
    ...context.steps.map(stepLine),
    '',
    context.completed.length ? 'Completed steps (results kept):' : 'No step has completed.',
    ...context.completed.map(({ step, task }) => `- ${step.id}: value ${tail(JSON.stringify(task.result?.value ?? null), 500)}`),
    '',
    ...(first ? failure(first) : []),
    ...others.flatMap((other) => ['', ...failure(other)]),
    ...(context.refusals.length
      ? [
          '',
          'Your earlier replies were refused; do not repeat these mistakes:',
          ...context.refusals.map((reason, index) => `${index + 1}. ${reason}`),
        ]
      : []),
    '',
    'Reply with the JSON object for the steps that have not completed.',
  ]
  return lines.join('\n')
}

/** The first balanced JSON object or array in a text (a model may wrap it in prose or a code fence). */
function firstJson(text: string): string | undefined {
  const start = text.search(/[{[]/)
  if (start < 0) return undefined
  let depth = 0
  let inString = false
  for (let index = start; index < text.length; index++) {
    const char = text[index]!
    if (inString) {
      if (char === '\\') index++
      else if (char === '"') inString = false
    } else if (char === '"') inString = true
    else if (char === '{' || char === '[') depth++
    else if (char === '}' || char === ']') {
      depth--
      if (depth === 0) return text.slice(start, index + 1)
    }
  }
  return undefined
}

/** Reads a reply: `{"note", "steps": [...]}` (a bare array of steps is taken too). Every flaw is a problem, named. */
export function parseRevisionReply(reply: string): RevisionReply {
  const json = firstJson(reply)
  if (!json) return { problem: 'unparseable reply: no JSON object in it' }
  let parsed: unknown
  try {
    parsed = JSON.parse(json)
  } catch (error) {
    return { problem: `unparseable reply: ${describeError(error)}` }
  }
  const body = Array.isArray(parsed) ? { steps: parsed } : (parsed as { steps?: unknown; note?: unknown })
  if (typeof body !== 'object' || body === null || !Array.isArray(body.steps))
    return { problem: 'unparseable reply: it has no "steps" array' }
  for (const [index, step] of body.steps.entries()) {
    const problem = findStepProblem(step)
    if (problem) return { problem: `steps[${index}]: ${problem}` }
  }
  return { steps: body.steps as PlanStepSpec[], ...(typeof body.note === 'string' && body.note ? { note: body.note.slice(0, 1000) } : {}) }
}

export interface ReflectorOptions {
  /** Longest answer asked of the model. @default 4096 */
  maxTokens?: number
}

export class Reflector {
  constructor(
    private readonly llm: LlmProvider,
    private readonly options: ReflectorOptions = {},
  ) {}

  /** Asks the model once; a model that fails or answers badly is a refused revision, never a thrown error. */
  async revise(context: RevisionContext, signal?: AbortSignal): Promise<RevisionReply> {
    let reply: string
    try {
      reply = await this.llm.complete({
        system: systemPrompt(context.allowedImports),
        messages: [{ role: 'user', text: userMessage(context) }],
        maxTokens: this.options.maxTokens ?? 4096,
        signal,
      })
    } catch (error) {
      return { problem: `the reflector did not answer: ${describeError(error)}` }
    }
    return parseRevisionReply(reply)
  }
}
