import { EXECUTION_REQUEST_SCHEMA, LANGUAGES } from '../core'
import { PLAN_SPEC_SCHEMA } from '../fabric/plans'
import { EXECGATE_VERSION } from './version'
import { OBSERVATION_PATHS } from './openapi-observation'
import { RESUME_CHANGES_BODY, TASK_PATHS, TASK_SCHEMAS } from './openapi-tasks'
import { LEDGER_PATHS } from './openapi-ledger'
import { sandboxOpenApiPaths } from './sandbox-schemas'
import { POLICY_PATHS, POLICY_SCHEMAS } from './openapi-policy'
import { FILE_PATHS, FILE_SCHEMAS } from './openapi-files'

const errorBody = {
  type: 'object',
  required: ['error'],
  properties: {
    error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
  },
}

const errorResponses = Object.fromEntries(
  [
    ['400', 'invalid body'],
    ['401', 'missing or wrong API key'],
    ['403', 'policy profile not allowed for the tenant'],
    ['413', 'body too large'],
    ['429', 'rate limit, full admission queue or quota (see Retry-After)'],
    ['503', 'shutting down (see Retry-After)'],
  ].map(([status, description]) => [
    status,
    { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
  ]),
)

const idParameter = { name: 'id', in: 'path', required: true, schema: { type: 'string' } }
const planBody = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Plan' } } } }

/** Plans (docs/plans.md): another tenant's plan answers 404 like a missing one. */
const planPaths = {
  '/v1/plans': {
    post: {
      summary: 'Run a plan: a DAG of code steps, revised by the reflector when a step fails',
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/PlanSpec' } } } },
      responses: {
        '201': { description: 'the plan, RUNNING', ...planBody },
        ...errorResponses,
      },
    },
    get: {
      summary: "The tenant's plans, oldest first (or newest first with order=newest), paged",
      parameters: [
        { name: 'state', in: 'query', schema: { type: 'string' } },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 500 } },
        { name: 'cursor', in: 'query', schema: { type: 'string' } },
        { name: 'order', in: 'query', schema: { enum: ['oldest', 'newest'] } },
      ],
      responses: { '200': { description: '{ plans, nextCursor }' }, ...errorResponses },
    },
  },
  '/v1/plans/{id}': {
    get: {
      summary: 'A plan: its steps with their states, its versions with what changed, its revisions',
      parameters: [idParameter],
      responses: { '200': { description: 'the plan', ...planBody }, '404': { description: 'no such plan for this tenant' } },
    },
    delete: {
      summary: 'Terminate a plan and its running steps',
      parameters: [idParameter],
      responses: {
        '200': { description: 'the plan, TERMINATED', ...planBody },
        '404': { description: 'no such plan for this tenant' },
        '409': { description: 'the plan had already ended' },
      },
    },
  },
  '/v1/plans/{id}/suspend': {
    post: {
      summary: 'Suspend a running plan: no step starts, running steps are suspended',
      parameters: [idParameter],
      responses: {
        '200': { description: 'the plan, SUSPENDED', ...planBody },
        '404': { description: 'no such plan for this tenant' },
        '409': { description: 'the plan is not RUNNING' },
      },
    },
  },
  '/v1/plans/{id}/resume': {
    post: {
      summary: 'Resume a suspended plan: its suspended steps run again (with the changed limits, if any), completed ones are kept',
      parameters: [idParameter],
      requestBody: RESUME_CHANGES_BODY,
      responses: {
        '200': { description: 'the plan, RUNNING', ...planBody },
        '400': {
          description:
            "the changes loosen the plan's policy profile for a step it held (naming the step and the " +
            'limit) or are malformed; nothing moves and the plan stays SUSPENDED ' +
            '(EXECGATE_RESUME_REFUSED); a field other than timeoutMs, memoryMb, adapter, policy ' +
            '(EXECGATE_REQUEST_INVALID)',
        },
        '404': { description: 'no such plan for this tenant' },
        '409': { description: 'the plan is not SUSPENDED' },
      },
    },
  },
  '/v1/plans/{id}/events': {
    get: {
      summary:
        "The plan's events as server-sent events (plan, step, revision, with their seq as id; " +
        "output, a step's rich output, live only and without id), until it ends; Last-Event-ID " +
        'resumes',
      parameters: [idParameter, { name: 'Last-Event-ID', in: 'header', schema: { type: 'string' } }],
      responses: {
        '200': { description: 'text/event-stream', content: { 'text/event-stream': {} } },
        '404': { description: 'no such plan for this tenant' },
      },
    },
  },
}

/** The OpenAPI 3.1 document served at /docs/json, built from the same JSON Schemas the server validates with. */
export function openApiDocument(): object {
  const { $id: _id, ...request } = EXECUTION_REQUEST_SCHEMA as { $id?: string }
  return {
    openapi: '3.1.0',
    info: {
      title: 'execgate',
      version: EXECGATE_VERSION,
      description: 'Run code for voice and chat agents, safely and fast. See docs/api.md.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        ExecutionRequest: request,
        ExecutionResult: {
          type: 'object',
          required: ['status', 'adapter', 'traceId', 'durationMs', 'stdout', 'stderr', 'truncated', 'usage'],
          description: 'See src/core/types.ts (ExecutionResult)',
        },
        ValidateRequest: {
          type: 'object',
          required: ['language', 'code'],
          properties: { language: { enum: [...LANGUAGES] }, code: { type: 'string', minLength: 1 }, adapter: { type: 'string' } },
        },
        Error: errorBody,
        ...TASK_SCHEMAS,
        ...POLICY_SCHEMAS,
        ...FILE_SCHEMAS,
        PlanSpec: (({ $id: _id, ...plan }) => plan)(PLAN_SPEC_SCHEMA),
        Plan: {
          type: 'object',
          required: ['id', 'state', 'version', 'steps', 'versions', 'revisions'],
          description: 'See src/fabric/plans/plan-types.ts (PlanView) and docs/plans.md',
        },
      },
    },
    security: [{ bearer: [] }],
    paths: {
      '/v1/executions': {
        post: {
          summary:
            'Run code; with Accept: text/event-stream, stdout/stderr events arrive as produced, an ' +
            'output event per rich output, and the result last',
          parameters: [
            {
              name: 'traceparent',
              in: 'header',
              schema: { type: 'string' },
              description: 'W3C trace context; its trace id becomes the traceId',
            },
            { name: 'X-Execgate-Profile', in: 'header', schema: { type: 'string' }, description: 'a policy profile the tenant may use' },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/ExecutionRequest' } } } },
          responses: {
            '200': {
              description: 'the result, whatever its status',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/ExecutionResult' } }, 'text/event-stream': {} },
            },
            ...errorResponses,
          },
        },
      },
      '/v1/validate': {
        post: {
          summary: 'Check code without running it',
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/ValidateRequest' } } } },
          responses: { '200': { description: 'a ValidationReport' }, ...errorResponses },
        },
      },
      '/v1/languages': { get: { summary: 'Languages the enabled adapters run', responses: { '200': { description: '{ languages }' } } } },
      '/v1/adapters': {
        get: {
          summary:
            'Adapter health, breakers, the active adapter and the last switch, admission slots and ' +
            'queues; node and nodes: every live node of the fabric (docs/sandboxes.md#many-nodes)',
          responses: { '200': { description: 'status' } },
        },
      },
      '/v1/sessions/{id}': {
        delete: {
          summary: 'Close a session',
          parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
          responses: { '404': { description: 'no such session for this tenant' } },
        },
      },
      ...planPaths,
      '/healthz': { get: { summary: 'The process is up', security: [], responses: { '200': { description: '{ status: up }' } } } },
      '/readyz': {
        get: {
          summary: 'The embedded adapters are warm and at least one adapter is available',
          security: [],
          responses: { '200': { description: 'ready' }, '503': { description: 'not ready' } },
        },
      },
      '/metrics': { get: { summary: 'Prometheus metrics', security: [], responses: { '200': { description: 'text exposition format' } } } },
      '/mcp': {
        post: {
          summary: 'MCP over streamable HTTP (stateless): tools execute_code, validate_code, list_languages',
          responses: { '200': { description: 'JSON-RPC response' } },
        },
      },
      ...TASK_PATHS,
      ...OBSERVATION_PATHS,
      ...POLICY_PATHS,
      ...FILE_PATHS,
      ...LEDGER_PATHS,
      '/console/': {
        get: {
          summary: 'The web console (docs/console.md): static files, no key needed; it asks for one',
          security: [],
          responses: { '200': { description: 'text/html' } },
        },
      },
      ...sandboxOpenApiPaths(errorResponses),
    },
  }
}
