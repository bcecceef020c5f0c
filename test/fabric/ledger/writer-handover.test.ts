import { DEFAULT_POLICY, type ExecutionRequest, type ExecutionResult, type RunInfo } from '../../../src'
import type { LedgerItem } from '../../../src/fabric/ledger/ledger-writer'
import { captureRun } from '../../../src/fabric/ledger/run-capture'
import { decodeHandOver, encodeHandOver } from '../../../src/fabric/ledger/writer-handover'

/**
 * What crosses to the ledger's writer thread: runs as flat columns, what they share once, plan versions and sandbox
 * files as they are. Passed through the real structured clone (`structuredClone`, what `postMessage` does), the
 * writer gets back exactly the items the result's path captured, in their order, every optional field included.
 */

const engines = { monty: '0.0.8' }
const otherPolicy = { ...DEFAULT_POLICY, wallTimeMs: 1234 }

function result(overrides: Partial<ExecutionResult> = {}): ExecutionResult {
  return {
    status: 'ok',
    adapter: 'monty',
    traceId: 'run-1',
    runId: 'run-1',
    durationMs: 0.0123,
    stdout: '',
    stderr: '',
    value: 2,
    truncated: false,
    stdoutBytes: 0,
    stderrBytes: 0,
    usage: { wallMs: 0.004 },
    ...overrides,
  }
}

function info(runId: string, overrides: Partial<RunInfo> = {}): RunInfo {
  return { runId, startedAt: 1_764_000_000_000, endedAt: 1_764_000_000_001, policy: DEFAULT_POLICY, tier: 1, engines, ...overrides }
}

const trivial = (runId: string): LedgerItem => ({
  kind: 'run',
  captured: captureRun(result({ traceId: runId, runId }), { language: 'python', code: '1 + 1' }, info(runId)),
})

function everything(): LedgerItem {
  const request: ExecutionRequest = {
    language: 'javascript',
    code: 'console.log(input)',
    stdin: 'some input',
    files: [
      { path: 'data.csv', content: 'a,b\n1,2\n' },
      { path: 'raw.bin', content: 'AAEC', encoding: 'base64' },
    ],
  }
  const run = result({
    status: 'error',
    adapter: 'quickjs',
    traceId: 'caller-trace',
    runId: 'run-full',
    stdout: 'printed\n',
    stderr: 'warned\n',
    value: { nested: [1, 'two', null] },
    error: { type: 'TypeError', code: 'EXECGATE_X', message: 'not recorded' },
    usage: { wallMs: 1.5, cpuMs: 1.25, memoryBytes: 4096 },
    fallbackFrom: { adapter: 'monty', reason: 'unsupported' },
    files: [{ path: 'out.txt', content: 'written' }],
    outputs: [{ kind: 'image', mimeType: 'image/png', data: 'iVBORw0KGgo=', bytes: 8 }],
    egress: [{ method: 'GET', host: 'api.example.test', port: 443, bytesOut: 10, bytesIn: 20, decision: 'allowed', durationMs: 3 }],
  })
  const context = info('run-full', {
    tenant: 'acme',
    agentType: 'analyst',
    lane: 'interactive',
    policy: otherPolicy,
    tier: 2,
    provenance: { taskId: 'task-1', attempt: 2, planId: 'plan-1', planVersion: 3, stepId: 'load' },
    workspaceReads: [{ path: 'layer.txt', content: new Uint8Array([104, 105]) }],
    uploads: [{ path: 'big.parquet', sha256: 'a'.repeat(64), bytes: 1_000_000 }],
  })
  return { kind: 'run', captured: captureRun(run, request, context) }
}

const plan: LedgerItem = {
  kind: 'plan',
  tenant: 'acme',
  entry: {
    kind: 'plan_version',
    tenant: 'acme',
    planId: 'plan-1',
    version: 3,
    document: { path: 'plan-plan-1-v3.json', sha256: 'b'.repeat(64), size: 2, mediaType: 'application/json' },
    execgateVersion: 'test',
    recordedAt: '2026-11-27T09:00:00.000Z',
  },
  bytes: new Uint8Array([123, 125]),
}

const sandboxFile: LedgerItem = {
  kind: 'sandbox_file',
  entry: {
    kind: 'sandbox_file',
    tenant: 'acme',
    sandboxId: 'sb-1',
    adapter: 'docker',
    file: { path: 'report.txt', sha256: 'c'.repeat(64), size: 1, mediaType: 'text/plain' },
    execgateVersion: 'test',
    recordedAt: '2026-11-27T09:00:00.000Z',
  },
  bytes: new Uint8Array([33]),
}

// toEqual, not toStrictEqual: structuredClone makes its objects in Node's realm, not the test's, so their types differ.
const crossed = (items: readonly LedgerItem[]) => decodeHandOver(structuredClone(encodeHandOver(items)))

/** What the writer is to get: each item as captured, but a run's info without its policy object (its summary crosses). */
const sent = (items: readonly LedgerItem[]): LedgerItem[] =>
  items.map((item): LedgerItem => {
    if (item.kind !== 'run') return item
    const { policy: _policy, ...run } = item.captured.run as RunInfo
    return { kind: 'run', captured: { ...item.captured, run } }
  })

test('every field of a run, and plan versions and sandbox files at their places, cross unchanged and in order', () => {
  const items = [plan, trivial('run-a'), everything(), sandboxFile, trivial('run-b'), plan]
  const decoded = crossed(items)
  expect(decoded).toEqual(sent(items))
  // The full run really carried its rarer fields (the comparison above would also pass on two empty captures).
  const full = decoded[2]
  expect(full?.kind === 'run' && full.captured).toMatchObject({
    traceId: 'caller-trace',
    stdin: 'some input',
    error: { type: 'TypeError', code: 'EXECGATE_X' },
    run: { tenant: 'acme', provenance: { stepId: 'load' }, uploads: [{ path: 'big.parquet' }] },
  })
})

test('a trivial run crosses as primitives, and what runs share crosses once a hand-over', () => {
  const items = [trivial('run-1'), trivial('run-2'), everything(), trivial('run-3')]
  const handOver = encodeHandOver(items)
  // One policy summary per policy, one engines object: not one per run.
  expect(handOver.shared).toHaveLength(3)
  expect(handOver.others).toBeUndefined()
  const width = handOver.runs.length / items.length
  const firstRun = handOver.runs.slice(0, width)
  expect(firstRun.every((value) => value === undefined || typeof value !== 'object')).toBe(true)
  // The trace id is the run id: not sent twice.
  expect(firstRun.filter((value) => value === 'run-1')).toHaveLength(1)

  const decoded = decodeHandOver(structuredClone(handOver))
  const captured = decoded.map((item) => (item.kind === 'run' ? item.captured : undefined))
  expect(captured.map((run) => run?.traceId)).toEqual(['run-1', 'run-2', 'caller-trace', 'run-3'])
  // Decoded runs share one summary object again, as captures of one policy do on the result's path.
  expect(captured[0]?.policy).toBe(captured[3]?.policy)
  expect(captured[0]?.run.engines).toBe(captured[1]?.run.engines)
  expect(JSON.parse(captured[2]!.policy!.text)).toMatchObject({ wallTimeMs: 1234 })
})

test('a hand-over of no runs, and one without a trace id, cross as they were', () => {
  expect(crossed([plan, sandboxFile])).toEqual([plan, sandboxFile])
  const withoutTrace = trivial('run-x')
  if (withoutTrace.kind === 'run') (withoutTrace.captured as { traceId?: string }).traceId = undefined
  expect(crossed([withoutTrace])).toEqual(sent([withoutTrace]))
  expect(crossed([])).toEqual([])
})
