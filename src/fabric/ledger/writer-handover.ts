import type { Lane, Tier } from '../../core/types'
import type { LedgerItem } from './ledger-writer'
import type { CapturedRun, CapturedRunInfo, PolicySummary } from './run-capture'

/**
 * How a hand-over crosses to the writer thread: its runs as one flat array of primitives, RUN_WIDTH values a run,
 * instead of an object graph per run. `postMessage` clones what it is given, and the structured clone of an object
 * writes every key of it, and the thread reads every key back into a new object: three objects and ~15 keys a trivial
 * run (item, capture, run info) cost the request thread ~1 µs and the writer ~1.6–3 µs a record (benchmarks.md). A
 * flat array is written and read value by value, with no keys and no objects. What runs share (a policy's summary,
 * an adapter's engines) crosses once a hand-over, by index; what few runs have (files, provenance, egress, an
 * error) crosses as the object it is, in the run's last column. Plan versions and sandbox files cross as they are,
 * at their place in the order.
 */

/** Columns of a run, in this order (a plain object, not an enum: esbuild loads this file in the thread as it is). */
const Column = {
  RunId: 0,
  StartedAt: 1,
  EndedAt: 2,
  Tenant: 3,
  AgentType: 4,
  Lane: 5,
  Tier: 6,
  /** Index of the adapter's engines in `shared`. */
  Engines: 7,
  /** Index of the policy's summary in `shared`. */
  Policy: 8,
  /** Absent when it is the run id (a request without a trace id takes the run id as one); null when there is none. */
  TraceId: 9,
  Adapter: 10,
  Status: 11,
  Language: 12,
  Code: 13,
  Stdin: 14,
  Stdout: 15,
  Stderr: 16,
  ValueJson: 17,
  WallMs: 18,
  CpuMs: 19,
  MemoryBytes: 20,
  DurationMs: 21,
  /** What few runs have (`Rare`), as an object; absent when the run has none of it. */
  Rare: 22,
} as const
type Column = (typeof Column)[keyof typeof Column]
const RUN_WIDTH = Column.Rare + 1

/** Run fields most runs leave out: cloned as an object, in the run's last column, when one of them is there. */
interface Rare {
  provenance?: CapturedRunInfo['provenance']
  workspaceReads?: CapturedRunInfo['workspaceReads']
  uploads?: CapturedRunInfo['uploads']
  inputs?: CapturedRun['inputs']
  outputs?: CapturedRun['outputs']
  generated?: CapturedRun['generated']
  error?: CapturedRun['error']
  fallbackFrom?: CapturedRun['fallbackFrom']
  egress?: CapturedRun['egress']
}
const RARE_KEYS = ['inputs', 'outputs', 'generated', 'error', 'fallbackFrom', 'egress'] as const
const RARE_RUN_KEYS = ['provenance', 'workspaceReads', 'uploads'] as const

/** One hand-over as it crosses: plain data for `postMessage`. */
export interface HandOver {
  /** RUN_WIDTH values a run, runs in order. */
  runs: unknown[]
  /** Objects runs share, by the index their column holds. */
  shared: object[]
  /** Items that are not runs, with their place among all the hand-over's items. */
  others?: { at: number; item: LedgerItem }[]
}

export function encodeHandOver(items: readonly LedgerItem[]): HandOver {
  const runs: unknown[] = []
  const shared: object[] = []
  const sharedIndex = new Map<object, number>()
  const indexOf = (value: object | undefined): number | undefined => {
    if (value === undefined) return undefined
    let index = sharedIndex.get(value)
    if (index === undefined) {
      index = shared.push(value) - 1
      sharedIndex.set(value, index)
    }
    return index
  }
  let others: HandOver['others']
  for (let at = 0; at < items.length; at++) {
    const item = items[at]!
    if (item.kind !== 'run') {
      ;(others ??= []).push({ at, item })
      continue
    }
    const { captured } = item
    const { run } = captured
    let rare: Rare | undefined
    for (const key of RARE_RUN_KEYS) if (run[key] !== undefined) (rare ??= {})[key] = run[key] as never
    for (const key of RARE_KEYS) if (captured[key] !== undefined) (rare ??= {})[key] = captured[key] as never
    runs.push(
      run.runId,
      run.startedAt,
      run.endedAt,
      run.tenant,
      run.agentType,
      run.lane,
      run.tier,
      indexOf(run.engines),
      indexOf(captured.policy),
      captured.traceId === run.runId ? undefined : (captured.traceId ?? null),
      captured.adapter,
      captured.status,
      captured.language,
      captured.code,
      captured.stdin,
      captured.stdout,
      captured.stderr,
      captured.valueJson,
      captured.wallMs,
      captured.cpuMs,
      captured.memoryBytes,
      captured.durationMs,
      rare,
    )
  }
  return others ? { runs, shared, others } : { runs, shared }
}

/** The items `encodeHandOver` was given, in their order, each run as `captureRun` made it (absent fields left out). */
export function decodeHandOver(handOver: HandOver): LedgerItem[] {
  const { runs, shared, others } = handOver
  const count = runs.length / RUN_WIDTH + (others?.length ?? 0)
  const items: LedgerItem[] = []
  let next = 0
  let other = 0
  for (let at = 0; at < count; at++) {
    const placed = others?.[other]
    if (placed?.at === at) {
      items.push(placed.item)
      other++
      continue
    }
    items.push({ kind: 'run', captured: decodeRun(runs, next, shared) })
    next += RUN_WIDTH
  }
  return items
}

function decodeRun(runs: readonly unknown[], at: number, shared: readonly object[]): CapturedRun {
  const value = (column: Column) => runs[at + column]
  const runId = value(Column.RunId) as string
  const run: { -readonly [K in keyof CapturedRunInfo]: CapturedRunInfo[K] } = {
    runId,
    startedAt: value(Column.StartedAt) as number,
    endedAt: value(Column.EndedAt) as number,
  }
  // Field by field, absent ones left out, as captureRun leaves them out.
  if (value(Column.Tenant) !== undefined) run.tenant = value(Column.Tenant) as string
  if (value(Column.AgentType) !== undefined) run.agentType = value(Column.AgentType) as string
  if (value(Column.Lane) !== undefined) run.lane = value(Column.Lane) as Lane
  if (value(Column.Tier) !== undefined) run.tier = value(Column.Tier) as Tier
  if (value(Column.Engines) !== undefined) run.engines = shared[value(Column.Engines) as number] as Record<string, string>
  const rare = value(Column.Rare) as Rare | undefined
  if (rare) for (const key of RARE_RUN_KEYS) if (rare[key] !== undefined) run[key] = rare[key] as never
  const traceId = value(Column.TraceId)
  const captured: CapturedRun = {
    run,
    traceId: traceId === undefined ? runId : ((traceId ?? undefined) as string),
    adapter: value(Column.Adapter) as string,
    status: value(Column.Status) as CapturedRun['status'],
    code: value(Column.Code) as string,
    durationMs: value(Column.DurationMs) as number,
  }
  if (value(Column.Policy) !== undefined) captured.policy = shared[value(Column.Policy) as number] as PolicySummary
  if (value(Column.Language) !== undefined) captured.language = value(Column.Language) as CapturedRun['language']
  if (value(Column.Stdin) !== undefined) captured.stdin = value(Column.Stdin) as string
  if (value(Column.Stdout) !== undefined) captured.stdout = value(Column.Stdout) as string
  if (value(Column.Stderr) !== undefined) captured.stderr = value(Column.Stderr) as string
  if (value(Column.ValueJson) !== undefined) captured.valueJson = value(Column.ValueJson) as string
  if (value(Column.WallMs) !== undefined) captured.wallMs = value(Column.WallMs) as number
  if (value(Column.CpuMs) !== undefined) captured.cpuMs = value(Column.CpuMs) as number
  if (value(Column.MemoryBytes) !== undefined) captured.memoryBytes = value(Column.MemoryBytes) as number
  if (rare) for (const key of RARE_KEYS) if (rare[key] !== undefined) captured[key] = rare[key] as never
  return captured
}
