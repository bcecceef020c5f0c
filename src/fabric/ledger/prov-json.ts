import type { ArtifactRef, LedgerEntry, PlanVersionRecord, RunRecord } from './types'

/**
 * Records as W3C PROV-JSON (https://www.w3.org/submissions/prov-json/): runs are activities, artifacts are entities
 * named by their digest, adapters are software agents acting for the tenant. Relations: `used` (inputs, code),
 * `wasGeneratedBy` (files, long streams, the value), `wasDerivedFrom` (each output from each thing its run used),
 * `wasAssociatedWith` (the run and its adapter, with the plan version's document as `prov:plan` for a plan step),
 * `actedOnBehalfOf` (the adapter for the tenant), and `wasRevisionOf` for plan versions, which PROV-JSON writes as
 * `wasDerivedFrom` with `prov:type` `prov:Revision`.
 */

type Attribute = string | number | boolean | { $: string; type: string }
type Node = Record<string, Attribute>

export interface ProvDocument {
  prefix: Record<string, string>
  entity: Record<string, Node>
  activity: Record<string, Node>
  agent: Record<string, Node>
  used: Record<string, Node>
  wasGeneratedBy: Record<string, Node>
  wasDerivedFrom: Record<string, Node>
  wasAssociatedWith: Record<string, Node>
  actedOnBehalfOf: Record<string, Node>
}

export const PROV_PREFIXES = {
  execgate: 'urn:execgate:',
  run: 'urn:execgate:run:',
  adapter: 'urn:execgate:adapter:',
  tenant: 'urn:execgate:tenant:',
  sha256: 'urn:sha256:',
  xsd: 'http://www.w3.org/2001/XMLSchema#',
}

const qname = (value: string) => ({ $: value, type: 'xsd:QName' })
export const entityId = (sha256: string) => `sha256:${sha256}`
export const runActivityId = (runId: string) => `run:${runId}`

/** Builds one document from any number of records; entities and agents shared by several appear once. */
export class ProvDocumentBuilder {
  private readonly document: ProvDocument = {
    prefix: { ...PROV_PREFIXES },
    entity: {},
    activity: {},
    agent: {},
    used: {},
    wasGeneratedBy: {},
    wasDerivedFrom: {},
    wasAssociatedWith: {},
    actedOnBehalfOf: {},
  }
  private counter = 0

  private relation(kind: Exclude<keyof ProvDocument, 'prefix' | 'entity' | 'activity' | 'agent'>, node: Node): void {
    this.document[kind][`_:${kind}${++this.counter}`] = node
  }

  private entity(ref: Pick<ArtifactRef, 'sha256' | 'size' | 'mediaType' | 'path'>, type: string, extra: Node = {}): string {
    const id = entityId(ref.sha256)
    this.document.entity[id] ??= { 'prov:type': qname(type), 'prov:label': ref.path, 'execgate:size': ref.size, 'execgate:mediaType': ref.mediaType, ...extra }
    return id
  }

  add(entry: LedgerEntry): this {
    if (entry.kind === 'plan_version') this.addPlanVersion(entry)
    else this.addRun(entry)
    return this
  }

  private addPlanVersion(entry: PlanVersionRecord): void {
    const id = this.entity(entry.document, 'prov:Plan', { 'execgate:planId': entry.planId, 'execgate:planVersion': entry.version, 'prov:generatedAtTime': entry.recordedAt, ...(entry.reason ? { 'execgate:reason': entry.reason } : {}) })
    if (entry.previousDocument) {
      const previous = this.entity(entry.previousDocument, 'prov:Plan', { 'execgate:planId': entry.planId, ...(entry.previousVersion !== undefined ? { 'execgate:planVersion': entry.previousVersion } : {}) })
      this.relation('wasDerivedFrom', { 'prov:generatedEntity': id, 'prov:usedEntity': previous, 'prov:type': qname('prov:Revision') })
    }
  }

  private addRun(entry: RunRecord): void {
    const activity = runActivityId(entry.runId)
    const limits: Node = entry.limits
      ? {
          'execgate:wallTimeMs': entry.limits.wallTimeMs,
          'execgate:cpuTimeMs': entry.limits.cpuTimeMs,
          'execgate:memoryMb': entry.limits.memoryMb,
          'execgate:outputBytes': entry.limits.outputBytes,
          'execgate:network': typeof entry.limits.network === 'string' ? entry.limits.network : entry.limits.network.join(','),
          'execgate:filesystem': entry.limits.filesystem,
          'execgate:maxProcesses': entry.limits.maxProcesses,
          'execgate:hostCallsMax': entry.limits.hostCalls.maxCount,
        }
      : {}
    const optional: [string, Attribute | undefined][] = [
      ['execgate:taskId', entry.taskId],
      ['execgate:attempt', entry.attempt],
      ['execgate:planId', entry.planId],
      ['execgate:planVersion', entry.planVersion],
      ['execgate:stepId', entry.stepId],
      ['execgate:agentType', entry.agentType],
      ['execgate:lane', entry.lane],
      ['execgate:language', entry.language],
      ['execgate:tier', entry.tier],
      ['execgate:policySha256', entry.policySha256],
      ['execgate:cpuMs', entry.cpuMs],
      ['execgate:peakMemoryBytes', entry.peakMemoryBytes],
      ['execgate:errorType', entry.error?.type],
      ['execgate:errorCode', entry.error?.code],
      ['execgate:stdinSha256', entry.stdin?.sha256],
      ['execgate:valueSha256', entry.value?.sha256],
      ['execgate:fallbackFrom', entry.fallbackFrom?.adapter],
    ]
    this.document.activity[activity] = {
      'prov:type': qname('execgate:Run'),
      'prov:startTime': entry.startedAt,
      'prov:endTime': entry.endedAt,
      'execgate:runId': entry.runId,
      'execgate:traceId': entry.traceId,
      'execgate:status': entry.status,
      'execgate:adapter': entry.adapter,
      'execgate:execgateVersion': entry.execgateVersion,
      'execgate:codeSha256': entry.code.sha256,
      'execgate:wallMs': entry.wallMs,
      'execgate:stdoutSha256': entry.stdout.sha256,
      'execgate:stderrSha256': entry.stderr.sha256,
      ...Object.fromEntries(optional.filter((pair): pair is [string, Attribute] => pair[1] !== undefined)),
      ...limits,
    }
    const adapter = `adapter:${entry.adapter}`
    this.document.agent[adapter] ??= { 'prov:type': qname('prov:SoftwareAgent'), ...(entry.tier !== undefined ? { 'execgate:tier': entry.tier } : {}) }
    const tenant = `tenant:${entry.tenant}`
    this.document.agent[tenant] ??= { 'prov:type': qname('prov:Organization') }
    const plan = entry.planDocument ? this.entity(entry.planDocument, 'prov:Plan', { 'execgate:planId': entry.planId ?? '', ...(entry.planVersion !== undefined ? { 'execgate:planVersion': entry.planVersion } : {}) }) : undefined
    this.relation('wasAssociatedWith', { 'prov:activity': activity, 'prov:agent': adapter, ...(plan ? { 'prov:plan': plan } : {}) })
    this.relation('actedOnBehalfOf', { 'prov:delegate': adapter, 'prov:responsible': tenant, 'prov:activity': activity })
    const used = [this.entity(entry.code, 'execgate:Code'), ...entry.inputs.map((ref) => this.entity(ref, 'execgate:File'))]
    this.relation('used', { 'prov:activity': activity, 'prov:entity': used[0]!, 'prov:role': 'code' })
    for (const input of used.slice(1)) this.relation('used', { 'prov:activity': activity, 'prov:entity': input, 'prov:role': 'input' })
    const generated = entry.outputs.map((ref) => this.entity(ref, 'execgate:File'))
    if (entry.stdout.stored) generated.push(this.entity({ ...entry.stdout, path: 'stdout', mediaType: 'text/plain; charset=utf-8' }, 'execgate:Stream'))
    if (entry.stderr.stored) generated.push(this.entity({ ...entry.stderr, path: 'stderr', mediaType: 'text/plain; charset=utf-8' }, 'execgate:Stream'))
    if (entry.value) generated.push(this.entity({ ...entry.value, path: 'value', mediaType: 'application/json' }, 'execgate:Value'))
    for (const output of generated) {
      this.relation('wasGeneratedBy', { 'prov:entity': output, 'prov:activity': activity, 'prov:time': entry.endedAt })
      for (const source of used) this.relation('wasDerivedFrom', { 'prov:generatedEntity': output, 'prov:usedEntity': source, 'prov:activity': activity })
    }
  }

  build(): ProvDocument {
    return this.document
  }
}
