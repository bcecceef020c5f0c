import type {
  ExportOptions,
  LedgerPublicKey,
  Lineage,
  LineageLimits,
  OpenLineageRunEvent,
  ProvDocument,
  ReceiptEnvelope,
  RemoteBytes,
  RunProvenanceRecord,
  VerifyReport,
} from './client-types'
import type { CallOptions, HttpTransport } from './http-transport'

/** `client.ledger`: provenance, lineage, exports and receipts of the tenant's runs (docs/ledger.md). */
export class RemoteLedger {
  constructor(private readonly http: HttpTransport) {}

  /** The run's provenance as a W3C PROV-JSON document. */
  provenance(runId: string, options?: CallOptions): Promise<ProvDocument> {
    return this.http.json('provenance', { params: { id: runId } }, options)
  }

  /** The run's ledger record with its place in the hash chain. */
  record(runId: string, options?: CallOptions): Promise<RunProvenanceRecord> {
    return this.http.json('record', { params: { id: runId } }, options)
  }

  /** The run's signed receipt: an in-toto Statement in a DSSE envelope (Ed25519), verifiable offline. */
  receipt(runId: string, options?: CallOptions): Promise<ReceiptEnvelope> {
    return this.http.json('receipt', { params: { id: runId } }, options)
  }

  /** A plan's signed receipt, covering its steps' run receipts and its versions' documents. */
  planReceipt(planId: string, options?: CallOptions): Promise<ReceiptEnvelope> {
    return this.http.json('planReceipt', { params: { id: planId } }, options)
  }

  /** The public key receipts verify with (`keyid`, PEM). */
  publicKey(options?: CallOptions): Promise<LedgerPublicKey> {
    return this.http.json('publicKey', {}, options)
  }

  lineage(sha256: string, limits: LineageLimits = {}, options?: CallOptions): Promise<Lineage> {
    return this.http.json('lineage', { params: { sha256 }, query: { ...limits } }, options)
  }

  export(format: 'prov-json', exportOptions?: ExportOptions, options?: CallOptions): Promise<ProvDocument>
  export(format: 'openlineage', exportOptions?: ExportOptions, options?: CallOptions): Promise<OpenLineageRunEvent[]>
  export(
    format: 'prov-json' | 'openlineage',
    exportOptions: ExportOptions = {},
    options?: CallOptions,
  ): Promise<ProvDocument | OpenLineageRunEvent[]> {
    return this.http.json('exportLedger', { query: { format, ...exportOptions } }, options)
  }

  /** Checks the tenant's hash chain; reports the first broken link. */
  verify(options?: CallOptions): Promise<VerifyReport> {
    return this.http.json('verifyLedger', {}, options)
  }
}

/** `client.files`: artifacts by their digest, the bytes runs and sandboxes stored in the ledger. */
export class RemoteFiles {
  constructor(private readonly http: HttpTransport) {}

  get(sha256: string, options?: CallOptions): Promise<RemoteBytes> {
    return this.http.bytes('artifact', { params: { sha256: sha256.replace(/^sha256:/, '') } }, options)
  }

  async text(sha256: string, options?: CallOptions): Promise<string> {
    return new TextDecoder().decode((await this.get(sha256, options)).content)
  }
}
