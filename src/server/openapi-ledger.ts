import { EXPORT_FORMATS } from '../fabric/ledger'

/** The artifact ledger's routes (src/server/ledger-routes.ts, docs/ledger.md) in the OpenAPI document. */

const sha256Parameter = { name: 'sha256', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9a-f]{64}$' } }
const runParameter = { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'the run id (`result.runId`)' }
const notFound = { '404': { description: 'no such run or artifact for this tenant' } }

export const LEDGER_PATHS = {
  '/v1/artifacts/{sha256}': { get: { summary: "An artifact's bytes, with its media type", parameters: [sha256Parameter], responses: { '200': { description: 'the content' }, ...notFound } } },
  '/v1/artifacts/{sha256}/lineage': {
    get: {
      summary: 'Ancestors and descendants of an artifact: runs (activities), artifacts (entities) and PROV relations',
      parameters: [sha256Parameter, { name: 'maxDepth', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 256 } }, { name: 'maxActivities', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 10000 } }],
      responses: { '200': { description: '{artifact, ancestors, descendants, truncated}' }, ...notFound },
    },
  },
  '/v1/runs/{id}/provenance': { get: { summary: "A run's provenance as W3C PROV-JSON", parameters: [runParameter], responses: { '200': { description: 'a PROV-JSON document' }, ...notFound } } },
  '/v1/runs/{id}/record': { get: { summary: "A run's ledger record with its seq, hash and prevHash", parameters: [runParameter], responses: { '200': { description: '{record, seq, hash, prevHash}' }, ...notFound } } },
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
  '/v1/ledger/verify': { get: { summary: "Checks the tenant's hash chain; reports the first broken link", responses: { '200': { description: '{tenant, ok, records, head, checkpoint?, broken?}' } } } },
}
