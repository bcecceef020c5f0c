import type { ArtifactRef, RunRecord } from './types'

/**
 * A run record as an OpenLineage RunEvent (https://openlineage.io/spec/2-0-2/OpenLineage.json), the form lineage
 * tools (Marquez, DataHub, …) ingest. Datasets are named by digest (`sha256:<hex>`) in the tenant's namespace, so
 * two runs that wrote and read the same bytes meet at the same dataset, as they do in the ledger; the path, size and
 * media type are in the `execgate_artifact` facet. Plan versions are not runs and are not exported here (PROV-JSON
 * carries them).
 */

const SCHEMA_URL = 'https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent'
const FACET_SCHEMA = 'urn:execgate:openlineage:facets:1'

export interface OpenLineageDataset {
  namespace: string
  name: string
  facets: Record<string, unknown>
}

export interface OpenLineageRunEvent {
  eventType: 'COMPLETE' | 'FAIL' | 'ABORT'
  eventTime: string
  producer: string
  schemaURL: string
  run: { runId: string; facets: Record<string, unknown> }
  job: { namespace: string; name: string; facets: Record<string, unknown> }
  inputs: OpenLineageDataset[]
  outputs: OpenLineageDataset[]
}

function jobName(entry: RunRecord): string {
  if (entry.planId !== undefined) return `plan.${entry.planId}.${entry.stepId ?? 'step'}`
  if (entry.taskId !== undefined) return `task.${entry.taskId}`
  return `execution.${entry.language ?? 'unknown'}`
}

export function openLineageEvent(entry: RunRecord): OpenLineageRunEvent {
  const producer = `urn:execgate:${entry.execgateVersion}`
  const facet = (fields: Record<string, unknown>) => ({ _producer: producer, _schemaURL: FACET_SCHEMA, ...fields })
  const namespace = `execgate://${entry.tenant}`
  const dataset = (ref: Pick<ArtifactRef, 'path' | 'sha256' | 'size' | 'mediaType'>, role: string): OpenLineageDataset => ({
    namespace,
    name: `sha256:${ref.sha256}`,
    facets: { execgate_artifact: facet({ path: ref.path, sha256: ref.sha256, size: ref.size, mediaType: ref.mediaType, role }) },
  })
  const outputs = entry.outputs.map((ref) => dataset(ref, 'output'))
  if (entry.stdout.stored) outputs.push(dataset({ ...entry.stdout, path: 'stdout', mediaType: 'text/plain; charset=utf-8' }, 'stdout'))
  if (entry.stderr.stored) outputs.push(dataset({ ...entry.stderr, path: 'stderr', mediaType: 'text/plain; charset=utf-8' }, 'stderr'))
  if (entry.value) outputs.push(dataset({ ...entry.value, path: 'value', mediaType: 'application/json' }, 'value'))
  return {
    eventType: entry.status === 'ok' ? 'COMPLETE' : entry.status === 'cancelled' ? 'ABORT' : 'FAIL',
    eventTime: entry.endedAt,
    producer,
    schemaURL: SCHEMA_URL,
    run: {
      runId: entry.runId,
      facets: {
        nominalTime: {
          _producer: producer,
          _schemaURL: 'https://openlineage.io/spec/facets/1-0-1/NominalTimeRunFacet.json#/$defs/NominalTimeRunFacet',
          nominalStartTime: entry.startedAt,
          nominalEndTime: entry.endedAt,
        },
        ...(entry.error
          ? {
              errorMessage: {
                _producer: producer,
                _schemaURL: 'https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json#/$defs/ErrorMessageRunFacet',
                message: entry.error.code ? `${entry.error.type} (${entry.error.code})` : entry.error.type,
                programmingLanguage: entry.language ?? 'unknown',
              },
            }
          : {}),
        execgate_run: facet({
          status: entry.status,
          adapter: entry.adapter,
          tier: entry.tier,
          traceId: entry.traceId,
          taskId: entry.taskId,
          attempt: entry.attempt,
          planId: entry.planId,
          planVersion: entry.planVersion,
          stepId: entry.stepId,
          agentType: entry.agentType,
          policySha256: entry.policySha256,
          limits: entry.limits,
          wallMs: entry.wallMs,
          cpuMs: entry.cpuMs,
          peakMemoryBytes: entry.peakMemoryBytes,
          stdout: entry.stdout,
          stderr: entry.stderr,
        }),
      },
    },
    job: {
      namespace,
      name: jobName(entry),
      facets: {
        jobType: {
          _producer: producer,
          _schemaURL: 'https://openlineage.io/spec/facets/2-0-3/JobTypeJobFacet.json#/$defs/JobTypeJobFacet',
          processingType: 'BATCH',
          integration: 'EXECGATE',
          jobType: entry.planId !== undefined ? 'PLAN_STEP' : entry.taskId !== undefined ? 'TASK' : 'EXECUTION',
        },
        execgate_code: facet({ language: entry.language, sha256: entry.code.sha256, size: entry.code.size }),
      },
    },
    inputs: [
      dataset(entry.code, 'code'),
      ...entry.inputs.map((ref) => dataset(ref, 'input')),
      ...(entry.planDocument ? [dataset(entry.planDocument, 'plan')] : []),
    ],
    outputs,
  }
}
