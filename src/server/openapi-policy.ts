import { POLICY_OVERRIDES_SCHEMA, SECURITY_POLICY_FIELDS } from '../core'

/** `GET /v1/policy` (src/server/policy-routes.ts) in the OpenAPI document: the caller's policy and the profiles it may ask for. */

export const POLICY_SCHEMAS = {
  SecurityPolicy: {
    ...POLICY_OVERRIDES_SCHEMA,
    required: [...SECURITY_POLICY_FIELDS],
    description: 'Everything a run is allowed to do (src/core/types.ts SecurityPolicy, docs/architecture.md#policy)',
  },
  CallerPolicy: {
    type: 'object',
    additionalProperties: false,
    required: ['profile', 'policy', 'profiles', 'requestFiles'],
    properties: {
      profile: { type: ['string', 'null'], description: "the caller's starting profile; null: the configured default policy" },
      policy: { $ref: '#/components/schemas/SecurityPolicy' },
      profiles: {
        type: 'array',
        description: 'profiles the caller may ask for with X-Execgate-Profile',
        items: {
          type: 'object',
          required: ['name', 'policy'],
          properties: { name: { type: 'string' }, policy: { $ref: '#/components/schemas/SecurityPolicy' } },
        },
      },
      requestFiles: {
        enum: ['read', 'refuse'],
        description: 'security.requestFiles: whether code reads the files its own request sent under filesystem "none"',
      },
    },
  },
}

export const POLICY_PATHS = {
  '/v1/policy': {
    get: {
      summary: 'The policy the caller runs under, and every policy profile it may ask for (X-Execgate-Profile), each in full',
      responses: {
        '200': {
          description: 'the caller policy',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/CallerPolicy' } } },
        },
        '401': { description: 'missing or wrong API key' },
      },
    },
  },
}
