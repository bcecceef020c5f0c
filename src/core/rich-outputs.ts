import type { ExecutionStatus, Output, SecurityPolicy } from './types'

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
 * The items a run may keep, in order: each checked, then kept while the count stays within `maxOutputs` and the
 * bytes within `outputsBytes`. `omittedByRunner` is what the runner already left out for the same limits.
 */
export function acceptOutputs(raw: unknown, policy: SecurityPolicy, omittedByRunner = 0): AcceptedOutputs {
  const items = Array.isArray(raw) ? raw : []
  const outputs: Output[] = []
  let bytes = 0
  let malformed = 0
  let overLimit = Math.max(0, Math.floor(omittedByRunner))
  for (const rawItem of items) {
    const output = acceptOutput(rawItem)
    if (!output) {
      malformed++
      continue
    }
    if (outputs.length >= policy.maxOutputs || bytes + output.bytes > policy.outputsBytes) {
      overLimit++
      continue
    }
    outputs.push(output)
    bytes += output.bytes
  }
  const reasons: string[] = []
  if (overLimit)
    reasons.push(
      `${overLimit} output${overLimit === 1 ? '' : 's'} left out: a run may return ${policy.maxOutputs} outputs of ${policy.outputsBytes} bytes in all (policy maxOutputs, outputsBytes)`,
    )
  if (malformed) reasons.push(`${malformed} malformed output${malformed === 1 ? '' : 's'} dropped`)
  return { outputs, overLimit, ...(reasons.length ? { reason: reasons.join('; ') } : {}) }
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
  const accepted = acceptOutputs(raw, policy, omittedByRunner)
  const outputs = accepted.outputs.length ? { outputs: accepted.outputs } : {}
  if (status === 'ok' && accepted.overLimit)
    return { status: 'output_limit', ...outputs, message: `[execgate] [${adapter}] ${accepted.reason}` }
  return { status, ...outputs }
}
