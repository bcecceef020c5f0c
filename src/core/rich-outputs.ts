import type { ExecutionResult, ExecutionStatus, Output, SecurityPolicy } from './types'

/**
 * Rich outputs as the host accepts them. A runner inside a sandbox reports them, so nothing it says is trusted:
 * each item is checked against the shapes of `Output`, its `bytes` counted here, and the list held to the policy's
 * `maxOutputs` and `outputsBytes` whatever the runner did with them.
 */

const IMAGE_TYPES = new Set(['image/png', 'image/svg+xml'])
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

function decodedBytes(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0
  return Math.floor((base64.length * 3) / 4) - padding
}

/** One item as the runner reported it, checked and counted, or undefined when it is not an output. */
export function acceptOutput(raw: unknown): Output | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined
  const item = raw as Record<string, unknown>
  switch (item.kind) {
    case 'image': {
      const { mimeType, data } = item
      if (typeof mimeType !== 'string' || !IMAGE_TYPES.has(mimeType)) return undefined
      if (typeof data !== 'string' || data.length % 4 !== 0 || !BASE64.test(data)) return undefined
      return { kind: 'image', mimeType: mimeType as 'image/png' | 'image/svg+xml', data, bytes: decodedBytes(data) }
    }
    case 'table': {
      const { columns, rows, rowCount } = item
      if (!Array.isArray(columns) || !columns.every((column) => typeof column === 'string')) return undefined
      if (!Array.isArray(rows) || !rows.every((row) => Array.isArray(row))) return undefined
      if (typeof rowCount !== 'number' || !Number.isInteger(rowCount) || rowCount < rows.length) return undefined
      const table = { columns: columns as string[], rows: rows as unknown[][] }
      return { kind: 'table', ...table, rowCount, bytes: Buffer.byteLength(JSON.stringify(table)) }
    }
    case 'html':
      if (typeof item.data !== 'string') return undefined
      return { kind: 'html', mimeType: 'text/html', data: item.data, bytes: Buffer.byteLength(item.data) }
    case 'json':
      if (!('data' in item)) return undefined
      return { kind: 'json', mimeType: 'application/json', data: item.data, bytes: Buffer.byteLength(JSON.stringify(item.data) ?? '') }
    default:
      return undefined
  }
}

export interface AcceptedOutputs {
  outputs: Output[]
  /** Items left out for the limits: over the count or the bytes, here or already by the runner (`omittedByRunner`). */
  overLimit: number
  /** Why items were left out, in words naming the limit; absent when none were. */
  reason?: string
}

/**
 * A run's outputs as they arrive, one at a time (a runner that reports them while the code runs): each item checked,
 * then kept while the count stays within `maxOutputs` and the bytes within `outputsBytes`; every item kept is handed
 * to `onOutput` at once, with its index, so a streaming caller sees it when the code made it. What is kept here is
 * exactly what a final `acceptOutputs` over the same items keeps, so the result's list starts with the streamed ones.
 */
export class OutputCollector {
  private readonly kept: Output[] = []
  private bytes = 0
  private malformed = 0
  private omitted = 0

  constructor(
    private readonly policy: Pick<SecurityPolicy, 'maxOutputs' | 'outputsBytes'>,
    private readonly onOutput?: (output: Output, index: number) => void,
  ) {}

  /** Checks and keeps one item as the runner reported it; true when it was kept. */
  add(raw: unknown): boolean {
    const output = acceptOutput(raw)
    if (!output) {
      this.malformed++
      return false
    }
    if (this.kept.length >= this.policy.maxOutputs || this.bytes + output.bytes > this.policy.outputsBytes) {
      this.omitted++
      return false
    }
    this.kept.push(output)
    this.bytes += output.bytes
    this.onOutput?.(output, this.kept.length - 1)
    return true
  }

  /** Items the runner already left out for the same limits. */
  omitByRunner(count: number | undefined): void {
    this.omitted += Math.max(0, Math.floor(count ?? 0))
  }

  get outputs(): readonly Output[] {
    return this.kept
  }

  result(): AcceptedOutputs {
    const reasons: string[] = []
    const { maxOutputs, outputsBytes } = this.policy
    if (this.omitted)
      reasons.push(
        `${this.omitted} output${this.omitted === 1 ? '' : 's'} left out: a run may return ` +
          `${maxOutputs} outputs of ${outputsBytes} bytes in all (policy maxOutputs, outputsBytes)`,
      )
    if (this.malformed) reasons.push(`${this.malformed} malformed output${this.malformed === 1 ? '' : 's'} dropped`)
    return { outputs: [...this.kept], overLimit: this.omitted, ...(reasons.length ? { reason: reasons.join('; ') } : {}) }
  }

  /**
   * Folds the outputs into a finished result: the runner's own omissions counted, the items set, and an `ok` run that
   * lost items to the limits made `output_limit` with a message saying so (a message the result has is kept).
   */
  applyTo(result: ExecutionResult, adapter: string, omittedByRunner: number | undefined): ExecutionResult {
    this.omitByRunner(omittedByRunner)
    const rich = this.fields(result.status, adapter)
    result.status = rich.status
    if (rich.outputs) result.outputs = rich.outputs
    if (rich.message) result.message ??= rich.message
    return result
  }

  /** The collected outputs as result fields (see outputResultFields). */
  fields(status: ExecutionStatus, adapter: string): { status: ExecutionStatus; outputs?: Output[]; message?: string } {
    if (!this.kept.length && !this.omitted && !this.malformed) return { status }
    return fieldsFrom(status, this.result(), adapter)
  }
}

/**
 * The items a run may keep, in order: each checked, then kept while the count stays within `maxOutputs` and the
 * bytes within `outputsBytes`. `omittedByRunner` is what the runner already left out for the same limits.
 */
export function acceptOutputs(raw: unknown, policy: SecurityPolicy, omittedByRunner = 0): AcceptedOutputs {
  const collector = new OutputCollector(policy)
  collector.omitByRunner(omittedByRunner)
  for (const item of Array.isArray(raw) ? raw : []) collector.add(item)
  return collector.result()
}

/** Bytes all of a result's outputs hold. */
export function outputsBytes(outputs: readonly Output[] | undefined): number {
  return (outputs ?? []).reduce((sum, output) => sum + output.bytes, 0)
}

/**
 * A run's outputs as result fields: the accepted items, and for a run that was `ok` but had items left out for the
 * limits, `output_limit` with a message naming them (the same rule as text past the output cap).
 */
export function outputResultFields(
  status: ExecutionStatus,
  raw: unknown,
  omittedByRunner: number | undefined,
  policy: SecurityPolicy,
  adapter: string,
): { status: ExecutionStatus; outputs?: Output[]; message?: string } {
  if (raw === undefined && !omittedByRunner) return { status }
  return fieldsFrom(status, acceptOutputs(raw, policy, omittedByRunner), adapter)
}

function fieldsFrom(
  status: ExecutionStatus,
  accepted: AcceptedOutputs,
  adapter: string,
): { status: ExecutionStatus; outputs?: Output[]; message?: string } {
  const outputs = accepted.outputs.length ? { outputs: accepted.outputs } : {}
  if (status === 'ok' && accepted.overLimit)
    return { status: 'output_limit', ...outputs, message: `[execgate] [${adapter}] ${accepted.reason}` }
  return { status, ...outputs }
}
