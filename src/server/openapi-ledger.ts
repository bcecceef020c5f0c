import { EXPORT_FORMATS } from '../fabric/ledger'

/** The artifact ledger's routes (src/server/ledger-routes.ts, docs/ledger.md) in the OpenAPI document. */

const sha256Parameter = { name: 'sha256', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9a-f]{64}$' } }
const runParameter = { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'the run id (`result.runId`)' }
const notFound = { '404': { description: 'no such run or artifact for this tenant' } }

const envelope = {
  description:
    'a DSSE envelope (payloadType application/vnd.in-toto+json) whose payload is an in-toto Statement v1; docs/ledger.md#signed-receipts',
  content: {
    'application/json': {
      schema: {
        type: 'object',
        required: ['payload', 'payloadType', 'signatures'],
        properties: {
          payload: { type: 'string', description: 'base64 of the Statement JSON' },
          payloadType: { const: 'application/vnd.in-toto+json' },
          signatures: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              required: ['keyid', 'sig'],
              properties: {
                keyid: { type: 'string', description: 'hex SHA-256 of the public key (DER SPKI)' },
                sig: { type: 'string', description: 'base64 Ed25519 signature over PAE(payloadType, payload)' },
              },
            },
          },
        },
      },
    },
  },
}

export const LEDGER_PATHS = {
  '/v1/artifacts/{sha256}': {
    get: {
      summary: "An artifact's bytes, with its media type",
      parameters: [sha256Parameter],
      responses: { '200': { description: 'the content' }, ...notFound },
    },
  },
  '/v1/artifacts/{sha256}/lineage': {
    get: {
      summary: 'Ancestors and descendants of an artifact: runs (activities), artifacts (entities) and PROV relations',
      parameters: [
        sha256Parameter,
        { name: 'maxDepth', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 256 } },
        { name: 'maxActivities', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 10000 } },
      ],
      responses: { '200': { description: '{artifact, ancestors, descendants, truncated}' }, ...notFound },
    },
  },
  '/v1/runs/{id}/provenance': {
    get: {
      summary: "A run's provenance as W3C PROV-JSON",
      parameters: [runParameter],
      responses: { '200': { description: 'a PROV-JSON document' }, ...notFound },
    },
  },
  '/v1/runs/{id}/record': {
    get: {
      summary: "A run's ledger record with its seq, hash and prevHash",
      parameters: [runParameter],
      responses: { '200': { description: '{record, seq, hash, prevHash}' }, ...notFound },
    },
  },
  '/v1/runs/{id}/receipt': {
    get: {
      summary: "A run's signed receipt: its record as an in-toto Statement in a DSSE envelope (Ed25519)",
      parameters: [runParameter],
      responses: { '200': envelope, ...notFound },
    },
  },
  '/v1/plans/{id}/receipt': {
    get: {
      summary: "A plan's signed receipt: subjects are its steps' run receipts (payload digests) and its versions' documents",
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
      responses: { '200': envelope, '404': { description: 'no recorded plan for this tenant' } },
    },
  },
  '/v1/ledger/public-key': {
    get: {
      summary: 'The Ed25519 public key receipts are signed with; Accept: application/x-pem-file answers the PEM alone',
      responses: {
        '200': {
          description: '{algorithm, keyid, publicKeyPem}',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['algorithm', 'keyid', 'publicKeyPem'],
                properties: { algorithm: { const: 'ed25519' }, keyid: { type: 'string' }, publicKeyPem: { type: 'string' } },
              },
            },
            'application/x-pem-file': {},
          },
        },
      },
    },
  },
  '/v1/ledger/export': {
    get: {
      summary: "The tenant's records as one PROV-JSON document or a list of OpenLineage RunEvents",
      parameters: [
        { name: 'format', in: 'query', schema: { enum: [...EXPORT_FORMATS] } },
        { name: 'afterSeq', in: 'query', schema: { type: 'integer', minimum: 0 } },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 10000 } },
      ],
      responses: { '200': { description: 'PROV-JSON, or an array of RunEvents' } },
    },
  },
  '/v1/ledger/verify': {
    get: {
      summary: "Checks the tenant's hash chain; reports the first broken link",
      responses: { '200': { description: '{tenant, ok, records, head, checkpoint?, broken?}' } },
    },
  },
}
