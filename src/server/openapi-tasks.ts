import { TASK_STATES } from '../fabric/tasks'

/** The durable task routes (src/server/task-routes.ts, docs/tasks.md) in the OpenAPI document. */

const errorOf = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
})
const id = { name: 'id', in: 'path', required: true, schema: { type: 'string' } }
const task = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Task' } } } })
const notFound = errorOf("no such task for this tenant (another tenant's task answers the same)")
const conflict = errorOf('the task is in a state that does not allow the action (EXECGATE_TASK_CONFLICT)')

export const TASK_SCHEMAS = {
  Task: {
    type: 'object',
    required: ['id', 'tenant', 'state', 'request', 'createdAt', 'updatedAt'],
    description: 'See src/fabric/tasks/task-types.ts (Task)',
  },
  TaskSpec: { type: 'object', required: ['request'], description: 'See docs/tasks.md (TASK_SPEC_SCHEMA)' },
}

/** The limits a resume may change (a task's, or the steps a plan held), each checked against the caller's profile. */
export const RESUME_CHANGES_BODY = {
  content: {
    'application/json': {
      schema: {
        type: 'object',
        properties: {
          timeoutMs: { type: 'integer' },
          memoryMb: { type: 'integer' },
          adapter: { type: 'string' },
          policy: { type: 'object' },
        },
        additionalProperties: false,
      },
    },
  },
}

export const TASK_PATHS = {
  '/v1/tasks': {
    post: {
      summary: 'Submit a durable task',
      parameters: [
        { name: 'Idempotency-Key', in: 'header', schema: { type: 'string' }, description: 'the same key returns the first task' },
      ],
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/TaskSpec' } } } },
      responses: {
        '201': task('the task, PENDING'),
        '400': errorOf(
          "invalid task (EXECGATE_REQUEST_INVALID), or its limits are looser than the tenant's " +
            'policy profile allows, naming the limit; nothing is stored (EXECGATE_SUBMIT_REFUSED)',
        ),
      },
    },
    get: {
      summary: "The caller's tasks, in submission order or newest first",
      parameters: [
        { name: 'state', in: 'query', schema: { enum: [...TASK_STATES] } },
        { name: 'intentId', in: 'query', schema: { type: 'string' } },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500 } },
        { name: 'cursor', in: 'query', schema: { type: 'string' }, description: 'the nextCursor of the previous page' },
        { name: 'order', in: 'query', schema: { enum: ['oldest', 'newest'] }, description: 'submission order (default) or newest first' },
      ],
      responses: { '200': { description: '{ tasks, nextCursor? }' }, '400': errorOf('a bad filter') },
    },
  },
  '/v1/tasks/{id}': {
    get: { summary: 'One task', parameters: [id], responses: { '200': task('the task'), '404': notFound } },
    delete: {
      summary: 'Cancel a task (TERMINATED)',
      parameters: [id],
      responses: { '200': task('the task, TERMINATED'), '404': notFound, '409': conflict },
    },
  },
  '/v1/tasks/{id}/suspend': {
    post: {
      summary: 'Suspend a pending or running task',
      parameters: [id],
      responses: { '200': task('the task, SUSPENDED'), '404': notFound, '409': conflict },
    },
  },
  '/v1/tasks/{id}/resume': {
    post: {
      summary: 'Resume a suspended task, optionally with other limits or adapter',
      parameters: [id],
      requestBody: RESUME_CHANGES_BODY,
      responses: {
        '200': task('the task, PENDING'),
        '400': errorOf(
          "the changes loosen the task's policy profile (naming the limit) or are malformed; the " +
            'task stays SUSPENDED (EXECGATE_RESUME_REFUSED)',
        ),
        '404': notFound,
        '409': conflict,
      },
    },
  },
  '/v1/tasks/{id}/events': {
    get: {
      summary: "The task's action log, then its transitions and output live, until it ends (Server-Sent Events)",
      parameters: [
        id,
        { name: 'Last-Event-ID', in: 'header', schema: { type: 'string' }, description: 'resume after this transition seq' },
      ],
      responses: {
        '200': {
          description:
            '`event: transition` (data: a TaskEvent, id: its seq), `event: stdout|stderr` (data: { ' +
            'chunk }), `event: output` per rich output (data: { index, attempt, output }; no id)',
          content: { 'text/event-stream': {} },
        },
        '404': notFound,
      },
    },
  },
}
