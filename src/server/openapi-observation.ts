import { READINESS_HISTORY_SIZE } from './readiness-history'

/** The routes of src/server/observation-routes.ts (what the console's Adapters and Activity pages show), in the OpenAPI document. */

const errorOf = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
})
const integer = (name: string, minimum: number, maximum: number, description: string) => ({
  name,
  in: 'query',
  schema: { type: 'integer', minimum, maximum },
  description,
})

export const OBSERVATION_PATHS = {
  '/v1/activity': {
    get: {
      summary: "The caller's finished runs over a window: rate, statuses and p50/p95 latency per adapter and lane, in buckets",
      description:
        'From the in-memory ring buffer of the last server.activityCapacity runs (all tenants share it; each sees only its own runs).',
      parameters: [
        integer('windowSeconds', 10, 86_400, 'default 300'),
        integer('bucketSeconds', 1, 86_400, 'default windowSeconds / 60; at most 720 buckets'),
      ],
      responses: {
        '200': { description: '{ capacity, fromMs, nowMs, bucketMs, knownSinceMs?, total, statuses, buckets[], series[] }' },
        '400': errorOf('a bad window or bucket'),
      },
    },
  },
  '/v1/readiness/events': {
    get: {
      summary:
        `The readiness monitor's health changes and active-adapter switches since the server ` +
        `started, oldest first (the last ${READINESS_HISTORY_SIZE})`,
      parameters: [integer('limit', 1, READINESS_HISTORY_SIZE, 'only the newest limit events')],
      responses: {
        '200': {
          description:
            "{ capacity, events: [{ type: 'health', adapter, from, to, reason?, at } | { type: 'switch', from, to, reason, at }] }",
        },
      },
    },
  },
  '/v1/adapters/{name}/policy': {
    get: {
      summary: "How the adapter holds each limit of the caller's policy: hard, soft or none",
      parameters: [
        { name: 'name', in: 'path', required: true, schema: { type: 'string' } },
        {
          name: 'profile',
          in: 'query',
          schema: { type: 'string' },
          description: "a policy profile the tenant may use; default the tenant's own, else security.defaultPolicy",
        },
      ],
      responses: {
        '200': { description: '{ profile, adapter, usable, rows: [{ limit, setting, enforcement, required, satisfied }] }' },
        '403': errorOf('a profile the tenant may not use'),
        '404': errorOf('no such adapter enabled'),
      },
    },
  },
}
