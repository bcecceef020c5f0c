import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ExecgateError } from '../core'
import { EXPORT_FORMATS, type ExportFormat, type LedgerCaller } from '../fabric/ledger'
import type { Execgate } from '../index'

/**
 * The artifact ledger over HTTP (docs/ledger.md). Every route is the calling tenant's: a run or an artifact the tenant
 * has no record of answers 404 exactly like a missing one, even when another tenant produced the same bytes.
 */

const callerOf = (request: FastifyRequest): LedgerCaller => ({ tenant: request.tenant.name })
const param = (request: FastifyRequest, name: string) => (request.params as Record<string, string>)[name]!

function optionalInteger(value: unknown, name: string, minimum: number, maximum: number): number | undefined {
  if (value === undefined) return undefined
  const parsed = Number(value)
  if (!Number.isInteger(parsed) || parsed < minimum || parsed > maximum) throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `${name} must be a whole number from ${minimum} to ${maximum}` })
  return parsed
}

export function registerLedgerRoutes(app: FastifyInstance, execgate: Execgate): void {
  app.get('/v1/artifacts/:sha256', async (request, reply) => {
    const artifact = await execgate.ledger.artifact(param(request, 'sha256'), callerOf(request))
    // Content-addressed: the same URL always names the same bytes.
    return reply
      .type(artifact.mediaType)
      .header('etag', `"${artifact.sha256}"`)
      .header('cache-control', 'private, max-age=31536000, immutable')
      .header('x-content-type-options', 'nosniff')
      .header('content-disposition', 'attachment')
      .send(artifact.content)
  })

  app.get('/v1/artifacts/:sha256/lineage', async (request) => {
    const query = request.query as { maxDepth?: string; maxActivities?: string }
    const maxDepth = optionalInteger(query.maxDepth, 'maxDepth', 1, 256)
    const maxActivities = optionalInteger(query.maxActivities, 'maxActivities', 1, 10_000)
    return execgate.ledger.lineage(param(request, 'sha256'), callerOf(request), { ...(maxDepth ? { maxDepth } : {}), ...(maxActivities ? { maxActivities } : {}) })
  })

  app.get('/v1/runs/:id/provenance', async (request, reply) => {
    const document = await execgate.ledger.provenance(param(request, 'id'), callerOf(request))
    return reply.type('application/json').send(document)
  })

  app.get('/v1/runs/:id/record', async (request) => execgate.ledger.record(param(request, 'id'), callerOf(request)))

  app.get('/v1/ledger/export', async (request) => {
    const query = request.query as { format?: string; afterSeq?: string; limit?: string }
    const format = query.format ?? 'prov-json'
    if (!(EXPORT_FORMATS as readonly string[]).includes(format)) throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `format must be one of: ${EXPORT_FORMATS.join(', ')}` })
    const afterSeq = optionalInteger(query.afterSeq, 'afterSeq', 0, Number.MAX_SAFE_INTEGER)
    const limit = optionalInteger(query.limit, 'limit', 1, 10_000)
    return execgate.ledger.export(format as ExportFormat, callerOf(request), { ...(afterSeq !== undefined ? { afterSeq } : {}), ...(limit ? { limit } : {}) })
  })

  app.get('/v1/ledger/verify', async (request) => execgate.ledger.verify(callerOf(request)))
}

const sha256Parameter = { name: 'sha256', in: 'path', required: true, schema: { type: 'string', pattern: '^[0-9a-f]{64}$' } }
const runParameter = { name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'the run id (`result.runId`)' }
const notFound = { '404': { description: 'no such run or artifact for this tenant' } }

/** The ledger's paths for the OpenAPI document (src/server/openapi.ts). */
export const LEDGER_OPENAPI_PATHS = {
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
