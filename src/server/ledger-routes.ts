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
  if (!Number.isInteger(parsed) || parsed < minimum || parsed > maximum)
    throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `${name} must be a whole number from ${minimum} to ${maximum}` })
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
    return execgate.ledger.lineage(param(request, 'sha256'), callerOf(request), {
      ...(maxDepth ? { maxDepth } : {}),
      ...(maxActivities ? { maxActivities } : {}),
    })
  })

  app.get('/v1/runs/:id/provenance', async (request, reply) => {
    const document = await execgate.ledger.provenance(param(request, 'id'), callerOf(request))
    return reply.type('application/json').send(document)
  })

  // Signed receipts (docs/ledger.md#signed-receipts): a DSSE envelope, JSON, verifiable offline with the public key.
  app.get('/v1/runs/:id/receipt', async (request) => execgate.ledger.receipt(param(request, 'id'), callerOf(request)))
  app.get('/v1/plans/:id/receipt', async (request) => execgate.ledger.planReceipt(param(request, 'id'), callerOf(request)))
  app.get('/v1/ledger/public-key', async (request, reply) => {
    const key = await execgate.ledger.publicKey()
    // `Accept: application/x-pem-file` (curl -H …) gets the PEM alone, ready for `verify-receipt --key`.
    if (/application\/x-pem-file/.test(request.headers.accept ?? '')) return reply.type('application/x-pem-file').send(key.publicKeyPem)
    return key
  })

  app.get('/v1/runs/:id/record', async (request) => execgate.ledger.record(param(request, 'id'), callerOf(request)))

  app.get('/v1/ledger/export', async (request) => {
    const query = request.query as { format?: string; afterSeq?: string; limit?: string }
    const format = query.format ?? 'prov-json'
    if (!(EXPORT_FORMATS as readonly string[]).includes(format))
      throw new ExecgateError('EXECGATE_REQUEST_INVALID', { detail: `format must be one of: ${EXPORT_FORMATS.join(', ')}` })
    const afterSeq = optionalInteger(query.afterSeq, 'afterSeq', 0, Number.MAX_SAFE_INTEGER)
    const limit = optionalInteger(query.limit, 'limit', 1, 10_000)
    return execgate.ledger.export(format as ExportFormat, callerOf(request), {
      ...(afterSeq !== undefined ? { afterSeq } : {}),
      ...(limit ? { limit } : {}),
    })
  })

  app.get('/v1/ledger/verify', async (request) => execgate.ledger.verify(callerOf(request)))
}
